"""Principle 3 (V2): a marker inside quotes or code is prose, also at a chunk edge."""

from __future__ import annotations

import pytest
from parser_samples import Opener, all_openers

from parsers import parse, stream
from parsers.registry import TOOL_PARSERS, normalize

OPENERS = all_openers()


def _kw(o: Opener) -> dict[str, object]:
    return {
        "tool_parser": o.tool_parser,
        "reasoning_parser": o.reasoning_parser,
        "thinking": o.thinking,
        "prompt": o.prompt,
        "generation": 2,
    }


def _id(o: Opener) -> str:
    return f"{o.tool_parser or o.reasoning_parser}-{o.opener!r}"


@pytest.mark.parametrize("opener", OPENERS, ids=_id)
@pytest.mark.parametrize("reason", ["stop", "length"])
def test_quoted_opener_stays_content(opener: Opener, reason: str) -> None:
    text = f'The literal "{opener.opener}" marker is part of the explanation.'
    results = [parse(text, finish_reason=reason, **_kw(opener))]  # type: ignore[arg-type]
    results.append(stream(list(text), finish_reason=reason, **_kw(opener)))  # type: ignore[arg-type]
    for i in range(len(text) + 1):
        results.append(stream([text[:i], text[i:]], finish_reason=reason, **_kw(opener)))  # type: ignore[arg-type]
    for msg in results:
        assert msg.route == "parser_v2"
        assert msg.content == text
        assert msg.reasoning_content is None
        assert msg.tool_calls == []
        assert msg.finish_reason == reason


@pytest.mark.parametrize("opener", OPENERS, ids=_id)
@pytest.mark.parametrize(
    "template",
    [
        "Use `{m}` to start a call.",
        "The tag '{m}' starts it; it's fine.",
        "Example:\n```\n{m}\n```\nEnd.",
    ],
)
def test_marker_in_code_or_single_quotes_is_prose(opener: Opener, template: str) -> None:
    text = template.format(m=opener.opener)
    msg = parse(text, **_kw(opener))  # type: ignore[arg-type]
    assert (msg.content, msg.tool_calls, msg.route) == (text, [], "parser_v2")
    assert stream(list(text), **_kw(opener)).content == text  # type: ignore[arg-type]


def _has_v1(o: Opener) -> bool:
    name = o.tool_parser or o.reasoning_parser
    return name is not None and 1 in TOOL_PARSERS[normalize(name)].family.generations


@pytest.mark.parametrize("opener", [o for o in OPENERS if o.is_call and _has_v1(o)], ids=_id)
def test_v1_is_not_quote_aware(opener: Opener) -> None:
    """V1 jails from a quoted opener and releases the text only at the end (same content)."""
    from parsers import StreamParser

    text = f'The literal "{opener.opener}" marker is part of the explanation.'
    kw = {**_kw(opener), "generation": 1}
    p = StreamParser(**kw)  # type: ignore[arg-type]
    early = "".join(d.content or "" for c in text for d in p.feed(c))
    late = "".join(d.content or "" for d in p.finish())
    assert p.route == "legacy_jail"
    assert early + late == text
    # V1 held back everything from the opener on until the end of output
    assert opener.opener not in early


@pytest.mark.parametrize("reasoning", ["deepseek_v41", "glm45", "qwen3"])
def test_quoted_marker_keeps_the_whole_answer_on_every_python(reasoning: str) -> None:
    # CPython before 3.11.5 (Debian 12 ships 3.11.2) mis-matched possessive quantifiers: the
    # prose scan then read `The literal "` as plain prose and the rest became markup or
    # reasoning. The parsers use no possessive quantifier or atomic group (parsers.atomic).
    text = 'The literal "<think>" marker is part of the explanation.'
    prompt = {"deepseek_v41": "<｜User｜>hi\n<｜Assistant｜>"}.get(reasoning)
    tool = {"deepseek_v41": "deepseek_v41", "glm45": "glm47", "qwen3": "hermes"}[reasoning]
    kw: dict[str, object] = {
        "tool_parser": tool,
        "reasoning_parser": reasoning,
        "prompt": prompt,
        "generation": 2,
    }
    for msg in (parse(text, **kw), stream([text], **kw)):  # type: ignore[arg-type]
        assert (msg.route, msg.content, msg.reasoning_content) == ("parser_v2", text, None)


def test_no_possessive_quantifier_or_atomic_group_in_any_parser_regex() -> None:
    import importlib
    import pkgutil
    import re
    import sys

    import parsers

    for info in pkgutil.walk_packages(parsers.__path__, "parsers."):
        importlib.import_module(info.name)
    # every compiled pattern reachable from the parsers' modules (sre_parse spells both as
    # POSSESSIVE_REPEAT / ATOMIC_GROUP; the plain text check is enough and version-proof)
    shapes = re.compile(r"(?<!\\)(?:[*+?}]\+|\(\?>)")
    found = []
    for name, module in list(sys.modules.items()):
        if name != "parsers" and not name.startswith("parsers."):
            continue
        for attr, value in vars(module).items():
            pattern = getattr(value, "pattern", None) or getattr(
                getattr(value, "__self__", None), "pattern", None
            )
            if isinstance(pattern, str) and shapes.search(pattern):
                found.append(f"{name}.{attr}")
    assert parsers.__name__ == "parsers" and not found, found
