"""`settings_for`: the settings behind a direct library call (`parsers.parse(generation=...)`)."""

from __future__ import annotations

import pytest

from parsers import ConfigError, select_route
from parsers.policy import settings_for


@pytest.mark.parametrize(
    ("tool", "reasoning", "generation", "route"),
    [
        # None means the family defaults, exactly as DYN_PARSER_VERSION unset/auto.
        ("qwen3_coder", None, None, "parser_v2"),
        ("hermes", "qwen3", None, "legacy_jail"),
        ("muse", "muse", None, "parser_v2"),
        (None, "deepseek_v41", None, "parser_v2"),
        ("kimi_k2", "kimi_k25", None, "legacy_jail"),
        (None, None, None, "pass_through"),
        ("qwen3_coder", None, 1, "legacy_jail"),
        ("hermes", "qwen3", 2, "parser_v2"),
        (None, None, 2, "pass_through"),
    ],
)
def test_generation_none_means_family_defaults(
    tool: str | None, reasoning: str | None, generation: int | None, route: str
) -> None:
    settings = settings_for(tool, reasoning, generation)
    assert select_route(settings, {}).kind == route
    assert settings.version == ("auto" if generation is None else str(generation))


def test_names_are_resolved_like_the_flags() -> None:
    settings = settings_for("Qwen25", "QWEN3", None)
    assert (settings.tool_parser, settings.reasoning_parser, settings.family) == (
        "hermes",
        "qwen3",
        "qwen3",
    )


@pytest.mark.parametrize(
    ("tool", "reasoning", "generation", "words"),
    [
        ("muse", None, 1, "generation=1"),
        (None, "deepseek_v41", 1, "generation=1"),
        ("glm47", None, 3, "generation=3"),
        ("glm47", None, 0, "generation=0"),
        ("glm47", None, True, "generation=True"),
        ("nope", None, None, "tool_parser"),
        (None, "nope", 2, "reasoning_parser"),
        ("glm47", "qwen3", None, "one family"),
    ],
)
def test_library_configuration_errors(
    tool: str | None, reasoning: str | None, generation: object, words: str
) -> None:
    with pytest.raises(ConfigError, match=words):
        settings_for(tool, reasoning, generation)  # type: ignore[arg-type]
