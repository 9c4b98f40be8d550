"""Command line of the sidecars: `sidecar ENGINE ...` and `sidecar-ENGINE ...` (`main_ENGINE`),
for each engine in `sidecar.engines.ENGINES`.

Everything is read and validated here, once, before the server listens: the parser settings
(`DYN_PARSER_VERSION` and friends, via `parsers.load_settings`), the parser names, the chat
template. A bad configuration exits with status 2 and the error message on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from parsers.errors import ConfigError
from parsers.registry import FAMILIES, normalize
from parsers.settings import load_settings
from sidecar.config import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEAD_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    SidecarConfig,
    Timeouts,
)
from sidecar.engines import ENGINES
from sidecar.engines.base import EngineAdapter
from sidecar.model_folder import ModelFolder, ModelFolderError, load_model_folder
from sidecar.prompt import ChatTemplate, TemplateError, check_template
from sidecar.structural import DEFAULT_GRAMMAR, ForcedChoice, ForcedMode, TagGrammar

EXIT_CONFIG = 2
API_KEY_VAR = "SIDECAR_API_KEY"
ENGINE_API_KEY_VAR = "SIDECAR_ENGINE_API_KEY"
CA_BUNDLE_VAR = "SSL_CERT_FILE"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
# for --help: the families whose facts turn thinking off by default
_THINKING_OFF_BY_DEFAULT = ", ".join(f.title for f in FAMILIES if not f.reasoning_default_on)


# uvicorn's level names (its `trace` is below DEBUG); uvicorn.config has the same table, but
# importing uvicorn waits until the configuration is valid (`--check-config` never does).
LOG_LEVELS = {
    "critical": logging.CRITICAL,
    "error": logging.ERROR,
    "warning": logging.WARNING,
    "info": logging.INFO,
    "debug": logging.DEBUG,
    "trace": 5,
}


def _parser(engine: str | None) -> argparse.ArgumentParser:
    prog = f"sidecar-{engine}" if engine else "sidecar"
    p = argparse.ArgumentParser(
        prog=prog,
        description="OpenAI-compatible chat completions in front of an inference engine.",
    )
    if engine is None:
        p.add_argument("engine", choices=sorted(ENGINES), help="the engine behind this sidecar")
    p.add_argument(
        "--engine-url", required=True, help="base URL of the engine, e.g. http://gpu:8000"
    )
    p.add_argument(
        "--model",
        required=True,
        help="model name served (sent to the engine); a Hugging Face model folder, as "
        "`vllm serve` takes it, is also read for its chat template and special tokens",
    )
    p.add_argument(
        "--tokenizer",
        type=Path,
        default=None,
        metavar="DIR",
        help="Hugging Face model folder the engine serves: its chat template "
        "(chat_template.jinja or tokenizer_config.json) and special tokens (default: --model "
        "when it is a folder)",
    )
    p.add_argument(
        "--served-model-name",
        nargs="+",
        default=None,
        metavar="NAME",
        help="name(s) clients use for the model, listed by /v1/models; responses carry the "
        "one the request named, else the first (default: --model)",
    )
    p.add_argument(
        "--enable-auto-tool-choice",
        action="store_true",
        help="accepted as in `vllm serve`: tool calls of tool_choice auto are always parsed "
        "when --tool-call-parser is set; this flag requires it",
    )
    p.add_argument(
        "--api-key",
        default=None,
        help=f"bearer token required on /v1/* (default: ${API_KEY_VAR}; none: open)",
    )
    p.add_argument(
        "--engine-api-key",
        default=None,
        help=f"bearer token sent to the engine (default: ${ENGINE_API_KEY_VAR})",
    )
    p.add_argument(
        "--engine-ca-bundle",
        type=Path,
        default=None,
        help="PEM file of CA certificates trusted for an https engine "
        "(default: $SSL_CERT_FILE, else certifi's bundle)",
    )
    p.add_argument("--tool-call-parser", default=None, help="tool-call parser, e.g. hermes")
    p.add_argument("--reasoning-parser", default=None, help="reasoning parser, e.g. qwen3")
    p.add_argument(
        "--chat-template",
        type=Path,
        default=None,
        help="Jinja2 chat template file, served instead of the model folder's (default: the "
        "model folder's, else the family's built-in)",
    )
    p.add_argument(
        "--default-thinking",
        choices=("on", "off"),
        default=None,
        help="deployment default for reasoning when a request says nothing "
        f"(default: the family's: {_THINKING_OFF_BY_DEFAULT} off, the others on)",
    )
    p.add_argument("--host", default="0.0.0.0", help="listen address (default 0.0.0.0)")
    p.add_argument("--port", type=int, default=8080, help="listen port (default 8080)")
    p.add_argument(
        "--engine-timeout",
        type=float,
        default=300.0,
        help="seconds the engine may stay silent before the request fails (default 300)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help=f"largest accepted request body (default {DEFAULT_MAX_BODY_BYTES})",
    )
    p.add_argument(
        "--request-head-timeout",
        type=float,
        default=DEFAULT_HEAD_TIMEOUT,
        help="seconds a client has to send a request's head, from its first byte "
        f"(default {DEFAULT_HEAD_TIMEOUT:g}); then 408 and the connection is closed",
    )
    p.add_argument(
        "--request-body-timeout",
        type=float,
        default=DEFAULT_BODY_TIMEOUT,
        help="seconds a client has to send a request's body, from the head's end "
        f"(default {DEFAULT_BODY_TIMEOUT:g})",
    )
    for adapter in ENGINES.values():  # every engine's options, whichever engine runs
        adapter.add_arguments(p)
    p.add_argument(
        "--forced-tool-choice",
        choices=("structural-tag", "guided-json"),
        default=None,
        help="how tool_choice required / named is constrained: a structural tag in the "
        "family's own call syntax (default), or the guided-JSON call array (engines without "
        "structural tags; the default with --vllm-guided-json); see docs/sidecar.md",
    )
    p.add_argument(
        "--structural-tag-grammar",
        default=".".join(map(str, DEFAULT_GRAMMAR)),
        metavar="XGRAMMAR_VERSION",
        help="the engine's xgrammar version: the tags use only what it accepts (default "
        f"{'.'.join(map(str, DEFAULT_GRAMMAR))}, vLLM 0.32; vLLM 0.11.x and TensorRT-LLM "
        "pinning xgrammar 0.1.25: 0.1.25)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        type=str.lower,
        choices=LOG_LEVELS,
        help="log level (default info; info and below include uvicorn's access log)",
    )
    p.add_argument(
        "--check-config", action="store_true", help="validate the configuration and exit"
    )
    return p


def make_adapter(engine: str, args: argparse.Namespace) -> EngineAdapter:
    return ENGINES[engine].from_arguments(args)


def configure(
    engine: str, args: argparse.Namespace, environ: Mapping[str, str]
) -> tuple[SidecarConfig, EngineAdapter, ChatTemplate]:
    """Validate everything; raises ConfigError / TemplateError with a message naming the cause."""
    if not args.engine_url.startswith(("http://", "https://")):
        raise ConfigError(f"--engine-url {args.engine_url!r} must start with http:// or https://")
    if args.engine_timeout <= 0:
        raise ConfigError("--engine-timeout must be a positive number of seconds")
    if args.max_body_bytes <= 0:
        raise ConfigError("--max-body-bytes must be positive")
    for flag, value in (
        ("--request-head-timeout", args.request_head_timeout),
        ("--request-body-timeout", args.request_body_timeout),
    ):
        if not 0 < value < float("inf"):
            raise ConfigError(f"{flag} must be a positive number of seconds")
    thinking_default = None if args.default_thinking is None else args.default_thinking == "on"
    if args.enable_auto_tool_choice and not args.tool_call_parser:
        raise ConfigError("--enable-auto-tool-choice requires --tool-call-parser")
    names = tuple(args.served_model_name or ())
    if any(not name.strip() for name in names):
        raise ConfigError("--served-model-name names must not be empty")
    api_key = _secret(args.api_key, environ, API_KEY_VAR, "--api-key")
    engine_api_key = _secret(args.engine_api_key, environ, ENGINE_API_KEY_VAR, "--engine-api-key")
    ca_bundle = _ca_bundle(args.engine_ca_bundle, environ)
    settings = load_settings(
        environ,
        tool_parser=args.tool_call_parser,
        reasoning_parser=args.reasoning_parser,
        thinking_default=thinking_default,
    )
    # the tool parser as named: an alias may pick its own model generation's template
    named = normalize(args.tool_call_parser) if args.tool_call_parser else None
    template = choose_template(args, settings.family, named or settings.tool_parser)
    adapter = make_adapter(engine, args)
    mode: ForcedMode = args.forced_tool_choice or adapter.forced_mode
    forced = ForcedChoice(
        mode, TagGrammar.parse(args.structural_tag_grammar, "--structural-tag-grammar")
    )
    config = SidecarConfig(
        engine=engine,
        engine_url=args.engine_url,
        model=args.model,
        settings=settings,
        max_body_bytes=args.max_body_bytes,
        timeouts=Timeouts(read=args.engine_timeout),
        served_model_names=names,
        api_key=api_key,
        engine_api_key=engine_api_key,
        engine_ca_bundle=ca_bundle,
        forced_choice=forced,
    )
    return config, adapter, template


def model_folder(args: argparse.Namespace) -> ModelFolder | None:
    """The model folder named by --tokenizer, else by --model when it is a folder."""
    path = args.tokenizer
    if path is None and Path(args.model).is_dir():
        path = Path(args.model)
    if path is None:
        return None
    try:
        return load_model_folder(path)
    except ModelFolderError as exc:
        raise ConfigError(f"--tokenizer: {exc}") from None


def choose_template(
    args: argparse.Namespace, family: str | None, tool_parser: str | None
) -> ChatTemplate:
    """--chat-template, else the model folder's own template, else the family's built-in;
    the folder's special tokens in every case. A template that does not compile stops
    startup (`TemplateError`)."""
    folder = model_folder(args)
    tokens = folder.special_tokens if folder is not None else {}
    if args.chat_template is not None:
        return ChatTemplate.from_file(args.chat_template, tokens)
    if folder is not None and folder.templates:
        return ChatTemplate.from_folder(folder)
    return ChatTemplate.builtin(family, tool_parser, tokens)


def _secret(flag: str | None, environ: Mapping[str, str], var: str, name: str) -> str | None:
    """A bearer token from its flag, else its variable; it must be sendable in a header."""
    value = flag if flag is not None else environ.get(var) or None
    if value is None:
        return None
    where = name if flag is not None else var
    if not value or not value.isprintable() or not value.isascii() or value != value.strip():
        raise ConfigError(f"{where}: a token must be printable ASCII without surrounding blanks")
    return value


def _ca_bundle(flag: Path | None, environ: Mapping[str, str]) -> str | None:
    """The CA bundle trusted for the engine: the flag, else SSL_CERT_FILE; checked readable."""
    where, path = "--engine-ca-bundle", flag
    if path is None and environ.get(CA_BUNDLE_VAR):
        where, path = CA_BUNDLE_VAR, Path(environ[CA_BUNDLE_VAR])
    if path is None:
        return None
    import ssl

    if not path.is_file():
        raise ConfigError(f"{where} {path}: not a regular file")
    try:
        ssl.create_default_context(cafile=str(path))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"{where} {path}: not a readable PEM CA bundle: {exc}") from None
    return str(path)


def proxy_warning(environ: Mapping[str, str]) -> str | None:
    """Proxy variables are not used for the engine connection: say so when they are set."""
    found = [var for var in PROXY_VARS if environ.get(var)]
    if not found:
        return None
    return (
        f"{', '.join(found)} set: the engine is always connected to directly "
        "(proxy variables are not used; see docs/sidecar.md)"
    )


def main(
    argv: Sequence[str] | None = None,
    engine: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Run a sidecar; `environ` (default: the process environment) is read here only."""
    args = _parser(engine).parse_args(argv)
    engine = engine or args.engine
    level = LOG_LEVELS[args.log_level]
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config, adapter, template = configure(
            engine, args, os.environ if environ is None else environ
        )
    except (ConfigError, TemplateError) as exc:
        print(f"sidecar-{engine}: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    s = config.settings
    summary = (
        f"engine={engine} url={config.engine_url} model={config.model} "
        f"tool_parser={s.tool_parser} reasoning_parser={s.reasoning_parser} "
        f"parser_version={s.version} template={template.describe()} "
        f"served_model_names={','.join(config.served_names)} "
        f"api_key={'set' if config.api_key else 'none'} "
        f"forced_tool_choice={config.forced_choice.describe()}"
    )
    # A template failing on the sample conversation is served (a request it fails on is a
    # 400 naming its message), with a warning naming the failure.
    sample_failure = check_template(template)
    if args.check_config:
        if sample_failure:
            print(f"sidecar-{engine}: warning: {sample_failure}", file=sys.stderr)
        print(f"configuration ok: {summary}")
        return 0
    import uvicorn

    from sidecar.app import build_app
    from sidecar.server import server_options

    logger = logging.getLogger("sidecar")
    logger.info("starting: %s", summary)
    if sample_failure:
        logger.warning("%s", sample_failure)
    warning = proxy_warning(os.environ if environ is None else environ)
    if warning:
        logger.warning(warning)
    app = build_app(config, adapter, template)
    options = server_options(level, args.request_head_timeout, args.request_body_timeout)
    uvicorn.run(app, host=args.host, port=args.port, log_level=level, **options)
    return 0


def __getattr__(name: str) -> Callable[[], int]:
    """`main_ENGINE` for each registered engine: what the `sidecar-ENGINE` scripts run."""
    engine = name.removeprefix("main_")
    if name.startswith("main_") and engine in ENGINES:
        return lambda: main(sys.argv[1:], engine=engine)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
