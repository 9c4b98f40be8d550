"""What a person sees without a terminal: each finished build step as one plain line.

`run_build` runs a real child process that prints BuildKit's plain progress (the log captured
from Docker 20.10 in test_plainlog.py), as `docker build --progress=plain` would.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from rich.console import Console
from test_plainlog import LOG

from buildtool.images.build import run_build
from buildtool.images.ui import ConsoleReporter, ListReporter


def printer(tmp_path: Path) -> list[str]:
    source = tmp_path / "log.txt"
    source.write_text(LOG)
    return [sys.executable, "-c", f"import sys; sys.stdout.write(open({str(source)!r}).read())"]


def test_each_finished_step_is_one_line(tmp_path: Path) -> None:
    report = ListReporter()
    rc, steps = run_build(printer(tmp_path), {}, tmp_path / "x.log", "sidecar-vllm", report)
    assert rc == 0 and len(steps) == 7
    assert report.progress_lines == [
        "sidecar-vllm: [python-base 2/2] RUN --mount=type=bind,source=wheelhouse,target=/wheelhouse"
        " python3 -m v…: cached",  # clipped to 90 characters
        "sidecar-vllm: [builder-base 3/3] COPY . /src/: done 0.1 s",
        "sidecar-vllm: [build-vllm 2/2] RUN --mount=type=cache,id=x,target=/cache,sharing=locked "
        "python3 -B -m b: done 1.6 s",
        "sidecar-vllm: [sidecar-vllm 1/1] RUN pip install /artifacts/x.whl: FAILED",
        "sidecar-vllm: [2/2] RUN false: canceled",
    ]
    # internal vertices and FROM (which only resolves an image) are not steps people wait for
    assert not any("[internal]" in line or "FROM" in line for line in report.progress_lines)


def test_console_prints_them_only_without_a_terminal(tmp_path: Path) -> None:
    plain = io.StringIO()
    with ConsoleReporter(Console(file=plain, force_terminal=False, width=200)) as report:
        run_build(printer(tmp_path), {}, tmp_path / "x.log", "sidecar-vllm", report)
    lines = plain.getvalue().splitlines()
    assert "sidecar-vllm: [builder-base 3/3] COPY . /src/: done 0.1 s" in lines
    assert len(lines) == 5

    tty = io.StringIO()
    with ConsoleReporter(Console(file=tty, force_terminal=True, width=200)) as report:
        run_build(printer(tmp_path), {}, tmp_path / "y.log", "sidecar-vllm", report)
    assert "done 0.1 s" not in tty.getvalue()  # the live status line shows the running step


def test_lines_are_printed_verbatim() -> None:
    """Step text is shell, not rich markup: `:x:` and [brackets] stay as they are."""
    out = io.StringIO()
    line = "sidecar-vllm: [runtime-base 1/2] RUN echo 'sidecar:x:10001:' >> /etc/group: done 0.5 s"
    with ConsoleReporter(Console(file=out, force_terminal=False, width=200)) as report:
        report.progress(line)
    assert out.getvalue().splitlines() == [line]
