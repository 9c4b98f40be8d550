"""The builder's incremental wheel install: only changed files replaced and recompiled, strays
removed, checked-hash pycs that match their sources, the console script, a clear error."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from buildtool.images import install as inst

pytest.importorskip("installer")

PURELIB = Path(sysconfig.get_paths()["purelib"]).relative_to("/")
SCRIPTS = Path(sysconfig.get_paths()["scripts"]).relative_to("/")


def make_wheel(folder: Path, modules: dict[str, str], version: str = "1.0") -> Path:
    """A minimal valid wheel of package `demo` with a console script `demo-cli`."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.whl"):
        old.unlink()
    info = f"demo-{version}.dist-info"
    files = {f"demo/{name}": text for name, text in modules.items()}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: demo\nVersion: {version}\n"
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{info}/entry_points.txt"] = "[console_scripts]\ndemo-cli = demo:main\n"
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    wheel = folder / f"demo-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def pyc_of(tree: Path, module: str) -> Path:
    return Path(importlib.util.cache_from_source(str(tree / PURELIB / "demo" / module)))


def is_checked_hash_pyc_of(pyc: Path, source: bytes) -> bool:
    header = pyc.read_bytes()[:16]
    return (
        header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == 0b11
        and header[8:16] == importlib.util.source_hash(source)
    )


MODULES = {
    "__init__.py": "def main() -> None:\n    print('demo ran')\n",
    "mod.py": "VALUE = 'AAAA'\n",
    "sub/__init__.py": "",
    "sub/gone.py": "X = 1\n",
}


def test_first_install_writes_everything_compiles_and_copies(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", MODULES)
    tree, out = tmp_path / "tree", tmp_path / "out"
    result = inst.install_incremental(wheel, tree, out)
    assert result.compiled == 4 and result.removed == 0 and result.unchanged == 0
    site = out / PURELIB
    assert (site / "demo" / "mod.py").read_text() == "VALUE = 'AAAA'\n"
    assert (site / "demo-1.0.dist-info" / "INSTALLER").read_text() == "buildtool\n"
    for module in ("__init__.py", "mod.py", "sub/__init__.py", "sub/gone.py"):
        source = (tree / PURELIB / "demo" / module).read_bytes()
        assert is_checked_hash_pyc_of(pyc_of(tree, module), source), module
    script = out / SCRIPTS / "demo-cli"
    assert script.read_text().startswith(f"#!{sys.executable}\n")
    assert script.stat().st_mode & 0o111
    # the installed package and its pyc work: run it from the copied tree
    ran = subprocess.run(
        [sys.executable, "-c", "import demo; demo.main()"],
        env={"PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout == "demo ran\n"


def test_same_wheel_again_changes_nothing(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "dist", MODULES)
    tree = tmp_path / "tree"
    inst.install_incremental(wheel, tree, tmp_path / "out1")
    before = {p: p.stat().st_mtime_ns for p in tree.rglob("*") if p.is_file()}
    result = inst.install_incremental(wheel, tree, tmp_path / "out2")
    assert (result.written, result.removed, result.compiled) == (0, 0, 0)
    assert {p: p.stat().st_mtime_ns for p in tree.rglob("*") if p.is_file()} == before


def test_a_same_size_edit_is_written_and_only_it_recompiled(tmp_path: Path) -> None:
    tree, out = tmp_path / "tree", tmp_path / "out"
    inst.install_incremental(make_wheel(tmp_path / "dist", MODULES), tree, tmp_path / "o1")
    edited = {**MODULES, "mod.py": "VALUE = 'BBBB'\n"}
    result = inst.install_incremental(make_wheel(tmp_path / "dist", edited), tree, out)
    assert result.compiled == 1
    assert result.written == 2  # the module and the RECORD (its hash)
    assert (out / PURELIB / "demo" / "mod.py").read_text() == "VALUE = 'BBBB'\n"
    assert is_checked_hash_pyc_of(pyc_of(out, "mod.py"), b"VALUE = 'BBBB'\n")


def test_a_removed_module_goes_with_its_pyc_and_empty_folder(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    inst.install_incremental(make_wheel(tmp_path / "dist", MODULES), tree, tmp_path / "o1")
    fewer = {k: v for k, v in MODULES.items() if not k.startswith("sub/")}
    result = inst.install_incremental(make_wheel(tmp_path / "dist", fewer), tree, tmp_path / "o2")
    assert result.removed == 4  # two modules, their two pycs
    assert not (tree / PURELIB / "demo" / "sub").exists()
    assert not (tmp_path / "o2" / PURELIB / "demo" / "sub").exists()


def test_a_stale_or_foreign_pyc_is_recompiled(tmp_path: Path) -> None:
    """A pyc left by a killed build (old source hash) or a timestamp pyc is never kept."""
    tree = tmp_path / "tree"
    wheel = make_wheel(tmp_path / "dist", MODULES)
    inst.install_incremental(wheel, tree, tmp_path / "o1")
    stale = pyc_of(tree, "mod.py")
    stale.write_bytes(stale.read_bytes()[:8] + b"\0" * 8 + stale.read_bytes()[16:])
    timestamp_pyc = pyc_of(tree, "__init__.py")
    import py_compile

    py_compile.compile(
        str(tree / PURELIB / "demo" / "__init__.py"),
        cfile=str(timestamp_pyc),
        invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
    )
    result = inst.install_incremental(wheel, tree, tmp_path / "o2")
    assert result.compiled == 2
    assert is_checked_hash_pyc_of(stale, MODULES["mod.py"].encode())
    assert is_checked_hash_pyc_of(timestamp_pyc, MODULES["__init__.py"].encode())


@pytest.mark.parametrize("count", [0, 2])
def test_not_exactly_one_wheel_is_an_error_naming_the_folder(
    tmp_path: Path, count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    for version in ("1.0", "2.0")[:count]:
        (dist / f"demo-{version}-py3-none-any.whl").write_bytes(b"")
    code = inst.main(["--wheel-dir", str(dist), "--tree", str(tmp_path / "t"), "--out", "o"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"expected one wheel in {dist}, found {count}" in err


def test_a_broken_wheel_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / "demo-1.0-py3-none-any.whl").write_bytes(b"not a zip")
    code = inst.main(["--wheel-dir", str(dist), "--tree", str(tmp_path / "t"), "--out", "o"])
    assert code == 1
    assert "demo-1.0-py3-none-any.whl" in capsys.readouterr().err


def test_dropped_package_and_its_script_leave_the_tree_and_record(tmp_path: Path) -> None:
    modules = {**MODULES}
    wheel = make_wheel(tmp_path / "dist", modules)
    # a second top-level package with its own console script, as the build tool in our wheel
    with zipfile.ZipFile(wheel, "a") as zf:
        info = "demo-1.0.dist-info"
        entry = zf.read(f"{info}/entry_points.txt").decode() + "tool-cli = tool.cli:main\n"
        record = zf.read(f"{info}/RECORD").decode() + "tool/__init__.py,,\ntool/cli.py,,\n"
    rebuilt = tmp_path / "dist2" / wheel.name
    rebuilt.parent.mkdir()
    with zipfile.ZipFile(wheel) as old, zipfile.ZipFile(rebuilt, "w") as new:
        for item in old.namelist():
            if item.endswith(("entry_points.txt", "RECORD")):
                continue
            new.writestr(item, old.read(item))
        new.writestr("tool/__init__.py", "")
        new.writestr("tool/cli.py", "def main() -> None:\n    pass\n")
        new.writestr(f"{info}/entry_points.txt", entry)
        new.writestr(f"{info}/RECORD", record)
    tree, out = tmp_path / "tree", tmp_path / "out"
    inst.install_incremental(rebuilt, tree, out, drop=("tool",))
    assert not (out / PURELIB / "tool").exists()
    assert not (out / SCRIPTS / "tool-cli").exists()
    assert (out / SCRIPTS / "demo-cli").is_file()
    assert (out / PURELIB / "demo" / "mod.py").is_file()
    record_text = (out / PURELIB / "demo-1.0.dist-info" / "RECORD").read_text()
    assert "tool/" not in record_text and "tool-cli" not in record_text
    assert "demo/mod.py" in record_text
    # and without --drop it is all there
    inst.install_incremental(rebuilt, tmp_path / "tree2", tmp_path / "out2")
    assert (tmp_path / "out2" / PURELIB / "tool" / "cli.py").is_file()
