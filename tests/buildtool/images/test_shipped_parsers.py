"""The parsers give the same results in the shipped image as on the host.

The image runs Debian 12's python3 (3.11.2); the host runs whatever the test session has. A
regex engine or standard library that differs between the two (CPython before 3.11.5 got
possessive quantifiers wrong) would change what users receive, so the whole corpus of
`tests/parsers/corpus.py` (every family, both generations, batch and three streamings) is
parsed in both places and compared result by result.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from images_support import ROOT
from in_image import image_platform, run, tools_for

from buildtool.images.daemon import Daemon

CORPUS = "tests/parsers/corpus.py"


@pytest.mark.docker
@pytest.mark.slow
def test_the_image_parses_every_corpus_case_as_the_host(
    daemon: Daemon, sidecar_images: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    image = next(iter(sidecar_images.values()))
    deps = tools_for(image_platform(daemon, image))
    status, shipped = run(daemon, image, f"python3 {CORPUS}", deps, echo=False)
    assert status == 0, shipped[-3000:]
    host = subprocess.run(
        [sys.executable, str(ROOT / CORPUS)], capture_output=True, text=True, check=True
    ).stdout
    # the in-image run prints one line about its interpreter first (in_image.WHERE_FROM)
    where, _, shipped = shipped.partition("\n")
    assert where.startswith("in-image python "), where
    image_rows = [json.loads(line) for line in shipped.splitlines()]
    host_rows = [json.loads(line) for line in host.splitlines()]
    assert len(host_rows) > 3000 and len(image_rows) == len(host_rows)
    differing = [(a, b) for a, b in zip(host_rows, image_rows, strict=True) if a != b]
    with capsys.disabled():  # the counts belong in CI's log
        print(f"\n{len(host_rows)} corpus results compared ({where}): {len(differing)} differing")
    assert not differing, differing[:5]
