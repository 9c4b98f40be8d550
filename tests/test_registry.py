"""The family registry: name normalization and errors listing the known names."""

import pytest

from parsers import ConfigError
from parsers.registry import FAMILIES, resolve_reasoning_parser, resolve_tool_parser


@pytest.mark.parametrize(
    ("written", "canonical", "family"),
    [
        ("GLM45", "glm47", "glm"),
        ("qwen3", "hermes", "qwen3"),
        ("Qwen3-Coder", "qwen3_coder", "qwen3"),
        ("muse-glimmer", "muse", "muse"),
        ("deepseek-v41", "deepseek_v41", "deepseek_v41"),
    ],
)
def test_tool_parser_names_normalize(written: str, canonical: str, family: str) -> None:
    found = resolve_tool_parser(written)
    assert (found.canonical, found.family.key) == (canonical, family)


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(ConfigError) as err:
        resolve_reasoning_parser("llama", flag="--reasoning-parser")
    message = str(err.value)
    assert "--reasoning-parser" in message
    assert "kimi_k25" in message and "qwen3" in message


def test_eight_families_v2_only_ones() -> None:
    assert len(FAMILIES) == 8
    assert {f.key for f in FAMILIES if f.generations == {2}} == {"deepseek_v41", "muse"}
