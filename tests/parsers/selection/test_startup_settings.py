"""Startup validation of DYN_PARSER_VERSION, its deprecated alias and the parser pair.

Every test passes its environment explicitly: `load_settings` reads only the mapping it is
given, so these tests hold whatever the surrounding process (e.g. `nox -s test-v1`) exports.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys

import pytest

from parsers import ConfigError, ParserSettings, load_settings, select_route

VERSION = "DYN_PARSER_VERSION"
ALIAS = "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2"


@pytest.mark.parametrize(
    "value",
    [
        "v1",
        "v2",
        "V2",
        "enabled",
        "y",
        "3",
        "0",
        "true",
        "AUTO",
        "Auto",
        " 2",
        "2 ",
        "1\n",
        " ",
        "   ",
        "\t",
        "auto ",
        "２",
        "\udcff",
        "2\udc80",
    ],
)
def test_bad_version_values_stop_startup(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({VERSION: value}, tool_parser="glm47")
    message = str(err.value)
    assert VERSION in message
    assert "auto, 1 or 2" in message  # the accepted values


def test_non_utf8_value_is_named_as_such_and_shown_as_bytes() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({VERSION: "2\udcff"})
    assert "not valid UTF-8" in str(err.value)
    assert r"b'2\xff'" in str(err.value)


def test_whitespace_only_value_is_not_the_same_as_unset() -> None:
    with pytest.raises(ConfigError, match=f"{VERSION}=' '.*only whitespace"):
        load_settings({VERSION: " "})


@pytest.mark.parametrize("value", ["v1", "v2"])
def test_v_prefix_gets_a_hint(value: str) -> None:
    with pytest.raises(ConfigError, match="without the 'v'"):
        load_settings({VERSION: value})


@pytest.mark.parametrize(("value", "expected"), [("auto", "auto"), ("1", "1"), ("2", "2")])
def test_accepted_versions(value: str, expected: str) -> None:
    settings = load_settings({VERSION: value}, tool_parser="hermes")
    assert settings.version == expected
    assert settings.version_source == VERSION


def test_unset_and_empty_mean_family_defaults() -> None:
    for environ in ({}, {VERSION: ""}, {ALIAS: ""}, {VERSION: "", ALIAS: ""}):
        settings = load_settings(environ, tool_parser="qwen3_coder")
        assert (settings.version, settings.version_source) == ("auto", "default")
        assert select_route(settings, {}).kind == "parser_v2"  # Qwen3-Coder's family default
        assert select_route(settings, {"tool_choice": "required"}).kind == "legacy_jail"


@pytest.mark.parametrize(
    "value",
    ["enabled", "y", "n", "2", "t", "maybe", " true", "false ", "  ", "ture", "\udcff"],
)
def test_bad_alias_values_stop_startup(value: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({ALIAS: value}, tool_parser="glm47")
    message = str(err.value)
    assert ALIAS in message
    assert "true/false, 1/0, on/off, yes/no" in message


@pytest.mark.parametrize("value", ["true", "TRUE", "True", "1", "on", "ON", "yes", "Yes"])
def test_alias_true_selects_v2(value: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="parsers"):
        settings = load_settings({ALIAS: value}, tool_parser="glm47")
    assert settings.version == "2"
    assert settings.version_source == ALIAS
    # GLM defaults to V1: the alias is what moved it.
    assert select_route(settings, {}).kind == "parser_v2"
    assert any(VERSION in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


@pytest.mark.parametrize("value", ["false", "FALSE", "0", "off", "Off", "no", "NO"])
def test_alias_false_selects_nothing(value: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="parsers"):
        default = load_settings({ALIAS: value}, tool_parser="glm47")
        explicit = load_settings({ALIAS: value, VERSION: "1"}, tool_parser="glm47")
        coder = load_settings({ALIAS: value}, tool_parser="qwen3_coder")
    assert (default.version, default.version_source) == ("auto", "default")
    assert select_route(default, {}).kind == "legacy_jail"
    assert select_route(coder, {}).kind == "parser_v2"  # family defaults still apply
    assert explicit.version == "1"
    # Using the deprecated variable is reported even when it selects nothing.
    assert any(VERSION in r.getMessage() and ALIAS in r.getMessage() for r in caplog.records)


def test_no_deprecation_warning_without_the_alias(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="parsers"):
        load_settings({VERSION: "2"}, tool_parser="glm47")
    assert not caplog.records


def test_alias_true_with_version_1_contradicts() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({ALIAS: "true", VERSION: "1"}, tool_parser="glm47")
    assert ALIAS in str(err.value) and f"{VERSION}=1" in str(err.value)


@pytest.mark.parametrize("version", ["2", "auto"])
def test_alias_true_with_version_2_or_auto_is_v2(version: str) -> None:
    settings = load_settings({ALIAS: "yes", VERSION: version}, tool_parser="kimi_k2")
    assert settings.version == "2"
    assert select_route(settings, {}).kind == "parser_v2"


def test_both_variables_bad_are_both_reported() -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({ALIAS: "enabled", VERSION: "v2"})
    assert ALIAS in str(err.value) and VERSION in str(err.value)


@pytest.mark.parametrize(
    ("tool", "reasoning", "flag"),
    [
        ("llama3_json", None, "--tool-call-parser"),
        (None, "deepseek_r1", "--reasoning-parser"),
        ("", None, "--tool-call-parser"),
        ("glm47", "glm46", "--reasoning-parser"),
    ],
)
def test_unknown_parser_name_lists_known_names(
    tool: str | None, reasoning: str | None, flag: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({}, tool_parser=tool, reasoning_parser=reasoning)
    message = str(err.value)
    assert flag in message
    assert "known names" in message
    assert ("qwen3_coder" if flag == "--tool-call-parser" else "kimi_k25") in message


def test_custom_flag_names_appear_in_errors() -> None:
    with pytest.raises(ConfigError, match="--dyn-tool-call-parser"):
        load_settings({}, tool_parser="nope", tool_parser_flag="--dyn-tool-call-parser")


@pytest.mark.parametrize(
    ("tool", "reasoning"),
    [
        ("glm47", "qwen3"),
        ("hermes", "deepseek_v4"),
        ("deepseek_v4", "deepseek_v41"),
        ("kimi_k3", "kimi_k25"),
        ("muse", "gemma4"),
    ],
)
def test_parsers_of_different_families_stop_startup(tool: str, reasoning: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({}, tool_parser=tool, reasoning_parser=reasoning)
    message = str(err.value)
    assert "--tool-call-parser" in message and "--reasoning-parser" in message
    assert "one family" in message


@pytest.mark.parametrize(
    ("tool", "reasoning"),
    [
        ("muse", None),
        (None, "muse"),
        ("muse_glimmer", "muse"),
        ("deepseek_v41", None),
        (None, "deepseek_v41"),
        ("DeepSeek-V41", "deepseek_v41"),
    ],
)
def test_version_1_with_a_v2_only_family_stops_startup(
    tool: str | None, reasoning: str | None
) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({VERSION: "1"}, tool_parser=tool, reasoning_parser=reasoning)
    assert f"{VERSION}=1" in str(err.value)
    assert "generation 2 only" in str(err.value)
    # The same deployment starts under auto and 2.
    for ok in ("auto", "2"):
        assert load_settings({VERSION: ok}, tool_parser=tool, reasoning_parser=reasoning)


def test_names_are_normalized_and_canonical() -> None:
    settings = load_settings({}, tool_parser="Qwen3-Coder", reasoning_parser="QWEN3")
    assert (settings.tool_parser, settings.reasoning_parser, settings.family) == (
        "qwen3_coder",
        "qwen3",
        "qwen3",
    )
    assert load_settings({}, tool_parser="qwen25").tool_parser == "hermes"
    assert load_settings({}, tool_parser="glm45", reasoning_parser="glm45").tool_parser == "glm47"


def test_settings_are_frozen_and_carry_the_thinking_default() -> None:
    settings = load_settings({}, reasoning_parser="gemma4", thinking_default=True)
    assert settings.thinking_default is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.version = "2"  # type: ignore[misc]
    assert isinstance(settings, ParserSettings)


def test_only_the_given_mapping_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VERSION, "bogus")
    monkeypatch.setenv(ALIAS, "bogus")
    assert load_settings({}, tool_parser="glm47").version == "auto"
    with pytest.raises(ConfigError, match=VERSION):
        load_settings(tool_parser="glm47")  # the default is the process environment


def test_real_process_with_non_utf8_bytes_in_the_environment(tmp_path: object) -> None:
    """Undecodable bytes travel through the real os.environ decoding (surrogateescape)."""
    env = {k.encode(): v.encode() for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH")}
    env[b"DYN_PARSER_VERSION"] = b"2\xff"
    env[b"LC_ALL"] = b"C.UTF-8"
    code = "import parsers; parsers.load_settings(tool_parser='glm47')"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, timeout=60, check=False
    )
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode != 0
    assert "ConfigError" in stderr and VERSION in stderr and "not valid UTF-8" in stderr


def test_the_selection_is_logged_once_at_startup(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="parsers"):
        load_settings({ALIAS: "true"}, tool_parser="qwen3_coder", reasoning_parser="qwen3")
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert lines == [
        "parser generation: V2 (unified parser) (from DYN_ENABLE_EXPERIMENTAL_PARSERS_V2); "
        "tool-call parser: qwen3_coder; reasoning parser: qwen3"
    ]
    assert load_settings({}).describe().startswith("parser generation: family defaults (unset)")
