"""Run marked tests each in a child process with a controlled environment (docs/testing.md).

`PARSER_MODES` is the usual `envs=` for a test that must hold under each parser mode:
`@pytest.mark.isolated(envs=PARSER_MODES)` gives the ids `unset`, `v1` and `v2`.
"""

from __future__ import annotations

PARSER_MODES: dict[str, dict[str, str | None]] = {
    "unset": {"DYN_PARSER_VERSION": None, "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": None},
    "v1": {"DYN_PARSER_VERSION": "1", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": None},
    "v2": {"DYN_PARSER_VERSION": "2", "DYN_ENABLE_EXPERIMENTAL_PARSERS_V2": None},
}
