"""A cargo workspace in two checkouts sharing one target folder (the shared-cache scenario of
docs/build-cache.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cache_support import TWO_HOURS, age_tree, run_helper, write

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed"),
]

BUILD_RS = """\
use std::{env, fs, path::Path};
fn main() {
    println!("cargo:rerun-if-changed=words.txt");
    let words = fs::read_to_string("words.txt").unwrap();
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("words.rs");
    fs::write(out, format!("pub const WORDS: &str = {:?};\\n", words.trim())).unwrap();
}
"""


def crate(root: Path, name: str, deps: str = "", kind: str = "lib") -> None:
    write(
        root / name / "Cargo.toml",
        f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'
        f"\n[dependencies]\n{deps}",
    )


def checkout(root: Path, body: str, words: str) -> Path:
    write(root / "Cargo.toml", '[workspace]\nmembers = ["core", "gen", "app"]\nresolver = "2"\n')
    crate(root, "core")
    write(root / "core" / "src" / "lib.rs", f'pub fn greet() -> &\'static str {{ "{body}" }}\n')
    crate(root, "gen")
    write(root / "gen" / "build.rs", BUILD_RS)
    write(root / "gen" / "words.txt", words + "\n")
    write(root / "gen" / "src" / "lib.rs", 'include!(concat!(env!("OUT_DIR"), "/words.rs"));\n')
    crate(root, "app", 'core = { path = "../core" }\ngen = { path = "../gen" }\n')
    write(
        root / "app" / "src" / "main.rs",
        'fn main() { println!("{} {}", core::greet(), gen::WORDS); }\n',
    )
    return root


@pytest.fixture(scope="module")
def cargo_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("cargo-home")
    env = dict(os.environ)
    env.update(
        CARGO_NET_OFFLINE="true",
        CARGO_INCREMENTAL="0",  # fewer files, faster tiny builds; freshness works the same
        CARGO_TERM_COLOR="never",
        CARGO_HOME=str(home),
        RUSTUP_HOME=os.environ.get("RUSTUP_HOME", str(Path.home() / ".rustup")),
    )
    env["PATH"] = os.environ["PATH"]
    return env


def runs(target: Path) -> str:
    return subprocess.run(
        [target / "debug" / "app"], capture_output=True, text=True, check=True
    ).stdout


def test_two_checkouts_share_a_target_folder(tmp_path: Path, cargo_env: dict[str, str]) -> None:
    target = tmp_path / "target"
    env = {**cargo_env, "CARGO_TARGET_DIR": str(target)}
    cargo = ["cargo", "build", "-v"]
    a = checkout(tmp_path / "a", "core-A", "alpha")
    first = run_helper(a, target, cargo, env=env)
    assert runs(target) == "core-A alpha\n"
    # cargo wrote Cargo.lock into the checkout: it joined the stamp, the next run is a no-op
    assert "now part of the stamp: Cargo.lock" in first.stderr
    assert "Compiling" not in run_helper(a, target, cargo, env=env).stderr

    b = checkout(tmp_path / "b", "core-B", "bravo")  # same sizes, new function body and words
    age_tree(b, time.time() - TWO_HOURS)
    plain = subprocess.run(cargo, cwd=b, env=env, capture_output=True, text=True, check=True)
    assert "Compiling" not in plain.stderr
    assert runs(target) == "core-A alpha\n"  # the problem: A's binary for B's sources

    fixed = run_helper(b, target, cargo, env=env)
    assert "changed (inputs changed)" in fixed.stderr
    assert "Compiling core" in fixed.stderr and "Running" in fixed.stderr  # build.rs reran
    assert runs(target) == "core-B bravo\n"

    # the same bytes again with old mtimes: every unit Fresh, nothing compiled
    age_tree(b, time.time() - TWO_HOURS)
    again = run_helper(b, target, cargo, env=env)
    assert "unchanged" in again.stderr
    assert "Compiling" not in again.stderr and "Running" not in again.stderr
    fresh = {
        line.split()[1] for line in again.stderr.splitlines() if line.strip().startswith("Fresh")
    }
    assert fresh == {"core", "gen", "app"}
    assert runs(target) == "core-B bravo\n"


def test_cargo_build_killed_then_resumed_equals_clean_build(
    tmp_path: Path, cargo_env: dict[str, str]
) -> None:
    import random

    from cache_support import kill_helper_after

    rng = random.Random(4242)
    target = tmp_path / "target"
    env = {**cargo_env, "CARGO_TARGET_DIR": str(target)}
    ws = checkout(tmp_path / "ws", "first", "one")
    run_helper(ws, target, ["cargo", "build"], env=env)
    for body, words in (("secnd", "two"), ("third", "thr")):
        checkout(ws, body, words)  # same sizes, new bytes
        kill_helper_after(rng.uniform(0.3, 2.0), ws, target, ["cargo", "build"], env=env)
        run_helper(ws, target, ["cargo", "build"], env=env)
        clean = tmp_path / f"clean-{body}"
        subprocess.run(
            ["cargo", "build"],
            cwd=ws,
            env={**cargo_env, "CARGO_TARGET_DIR": str(clean)},
            check=True,
            capture_output=True,
        )
        assert runs(target) == runs(clean) == f"{body} {words}\n"
