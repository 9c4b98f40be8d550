"""Running sidecars against fake engines on loopback, for the sidecar tests."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from parsers.settings import load_settings
from sidecar.app import build_app
from sidecar.config import SidecarConfig, Timeouts
from sidecar.engines import ENGINES
from sidecar.engines.base import EngineAdapter
from sidecar.fake_engine import FakeEngine, RunningServer, serve_in_thread
from sidecar.prompt import ChatTemplate
from sidecar.server import UVICORN_TESTED, server_options
from sidecar.structural import ForcedChoice

KINDS = tuple(ENGINES)  # each needs a fake engine of its kind (sidecar.fake_engine)
MODEL = "fake-model"


@dataclass
class Deployment:
    """One fake engine with the sidecars started in front of it (keyed by their config)."""

    kind: str
    engine: FakeEngine
    engine_server: RunningServer
    sidecars: dict[tuple[object, ...], RunningServer] = field(default_factory=dict)

    def sidecar(
        self,
        tool_parser: str | None = None,
        reasoning_parser: str | None = None,
        environ: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        max_body_bytes: int = 1 << 20,
        forced: ForcedChoice | None = None,
    ) -> str:
        """Base URL of a sidecar with this configuration (started on first use)."""
        env = dict(environ or {})
        forced = forced or ForcedChoice()
        key = (
            tool_parser,
            reasoning_parser,
            tuple(sorted(env.items())),
            timeout,
            max_body_bytes,
            forced,
        )
        if key not in self.sidecars:
            settings = load_settings(
                env, tool_parser=tool_parser, reasoning_parser=reasoning_parser
            )
            config = SidecarConfig(
                engine=self.kind,
                engine_url=self.engine_server.url,
                model=MODEL,
                settings=settings,
                max_body_bytes=max_body_bytes,
                timeouts=Timeouts(read=timeout, connect=2.0, health=1.0),
                forced_choice=forced,
            )
            template = ChatTemplate.builtin(settings.family, settings.tool_parser)
            app = build_app(config, adapter_for(self.kind), template)
            self.sidecars[key] = serve_in_thread(app, **server_options())
        return self.sidecars[key].url

    def stop(self) -> None:
        for server in self.sidecars.values():
            server.stop()
        self.engine_server.stop()


def adapter_for(kind: str) -> EngineAdapter:
    return ENGINES[kind]()


def deploy(
    kind: str,
    *,
    incremental: bool = False,
    enforces_guided: bool = True,
) -> Iterator[Deployment]:
    engine = FakeEngine(kind, incremental=incremental, enforces_guided=enforces_guided)
    deployment = Deployment(kind, engine, serve_in_thread(engine.app))
    try:
        yield deployment
    finally:
        deployment.stop()


def uvicorn_tested() -> bool:
    """The installed uvicorn is inside the release range the front was tested with."""
    from uvicorn import __version__

    parts = tuple(int(p) for p in __version__.split(".")[:2] if p.isdigit())
    low, high = UVICORN_TESTED
    return len(parts) == 2 and low <= parts < high
