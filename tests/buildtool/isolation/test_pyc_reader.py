"""Isolated children read pytest's rewritten bytecode whole (`pyc_reader`): same code objects,
same handling of a damaged file, and assertion rewriting still works in the child."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import CodeType

import pytest
from _pytest.assertion import rewrite

from buildtool.isolation import pyc_reader

SOURCE = "def f(x):\n    assert x == 1, 'x'\n    return {'a': (1, 2.5, b'b', None)}\n"


@pytest.fixture
def reader_restored() -> Iterator[None]:
    was_installed = pyc_reader.installed()
    pyc_reader.uninstall()  # pytest's own reader first, for reference
    try:
        yield
    finally:
        if was_installed:
            pyc_reader.install()
        else:
            pyc_reader.uninstall()


def _pyc(tmp_path: Path) -> tuple[Path, Path, CodeType]:
    source = tmp_path / "probe.py"
    source.write_text(SOURCE)
    code = compile(SOURCE, str(source), "exec")
    pyc = tmp_path / "probe.pyc"
    with open(pyc, "wb") as fp:
        rewrite._write_pyc_fp(fp, importlib.util.source_hash(source.read_bytes()), code)
    return source, pyc, code


def test_the_code_read_is_the_code_written(tmp_path: Path, reader_restored: None) -> None:
    source, pyc, code = _pyc(tmp_path)
    expected = rewrite._read_pyc(source, pyc)
    pyc_reader.install()
    pyc_reader.install()  # idempotent
    assert pyc_reader.installed()
    assert rewrite._read_pyc(source, pyc) == expected == code
    pyc_reader.uninstall()
    pyc_reader.uninstall()  # idempotent
    assert not pyc_reader.installed()
    assert rewrite._read_pyc(source, pyc) == code


@pytest.mark.parametrize("cut", [17, 40, -3])
def test_a_truncated_file_is_refused_as_pytest_refuses_it(
    tmp_path: Path, reader_restored: None, cut: int
) -> None:
    source, pyc, _ = _pyc(tmp_path)
    pyc.write_bytes(pyc.read_bytes()[:cut])
    assert rewrite._read_pyc(source, pyc) is None
    pyc_reader.install()
    assert rewrite._read_pyc(source, pyc) is None  # recompiled by pytest, never a bad module


@pytest.mark.isolated(env={"ISOLATION_PYC_PROBE": "1"})
def test_an_isolated_child_reads_rewritten_bytecode_whole_when_asked(
    request: pytest.FixtureRequest,
) -> None:
    used = request.config.getoption("isolated_accelerators").split(",")
    assert pyc_reader.installed() == ("pyc_reader" in used)  # --isolated-plain: pytest's own


@pytest.mark.isolated(env={"ISOLATION_PYC_PROBE": "1"})
def test_assertions_are_still_rewritten_in_the_child() -> None:
    value = [1, 2]
    with pytest.raises(AssertionError) as info:
        assert value == [1, 3]
    assert "[1, 2] == [1, 3]" in str(info.value)  # pytest's introspection, not a bare assert
