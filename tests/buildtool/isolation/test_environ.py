"""The child's environment: allowlist (+ isolated_inherit), no credentials, None unsets."""

from __future__ import annotations

import pytest

from buildtool.isolation.environ import child_environ, describe, is_inherited, validate_env

PARENT = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "TMPDIR": "/tmp/x",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "VIRTUAL_ENV": "/venv",
    "PYTHONPATH": "/src",
    "DYN_PARSER_VERSION": "1",
    "AWS_SECRET_ACCESS_KEY": "s3cr3t",
    "GITHUB_TOKEN": "ghp_x",
    "OPENAI_API_KEY": "sk-x",
    "LC_API_KEY": "nope",
    "PYTEST_XDIST_WORKER": "gw0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "EDITOR": "vi",
}


def test_allowlist_only_without_isolated_inherit() -> None:
    assert "DYN_PARSER_VERSION" not in child_environ(PARENT, {})


def test_allowlist_and_the_inherited_names_only() -> None:
    env = child_environ(PARENT, {}, extra=("DYN_PARSER_VERSION", "GITHUB_TOKEN"))
    assert set(env) == {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "LC_ALL",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "DYN_PARSER_VERSION",
    }
    assert env["PATH"] == "/usr/bin"


@pytest.mark.parametrize(
    "name", ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY", "LC_API_KEY"]
)
def test_credentials_are_never_inherited(name: str) -> None:
    assert not is_inherited(name)
    assert name not in child_environ(PARENT, {})


def test_marker_env_wins_and_none_unsets() -> None:
    env = child_environ(PARENT, {"DYN_PARSER_VERSION": "2", "HOME": None, "EXTRA": "x"})
    assert env["DYN_PARSER_VERSION"] == "2"
    assert "HOME" not in env
    assert env["EXTRA"] == "x"
    unset = child_environ(PARENT, {"DYN_PARSER_VERSION": None}, extra=("DYN_PARSER_VERSION",))
    assert "DYN_PARSER_VERSION" not in unset


def test_an_explicit_credential_is_the_test_s_choice() -> None:
    assert child_environ(PARENT, {"OPENAI_API_KEY": "sk-test"})["OPENAI_API_KEY"] == "sk-test"


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"X": 1}, "env['X'] must be a str or None"),
        ({"": "v"}, "invalid environment variable name ''"),
        ({"A=B": "v"}, "invalid environment variable name 'A=B'"),
        ({"X": "a\0b"}, "NUL"),
        (["X"], "env must be a mapping"),
    ],
)
def test_bad_env_is_named(env: object, fragment: str) -> None:
    with pytest.raises((TypeError, ValueError)) as err:
        validate_env(env, "test_x")
    assert fragment in str(err.value)
    assert "test_x" in str(err.value)


def test_describe() -> None:
    assert describe({"B": None, "A": "1"}) == "A=1 B=<unset>"
    assert describe({}) == "(allowlist only)"
