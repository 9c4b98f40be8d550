"""The value types behave as frozen dataclasses, and the per-feed builders that fill a
`Delta`'s or a `ToolCall`'s `__dict__` directly (`parsers.types`) make exactly what the
constructors make: repr text, ==, hash, immutability, copy/pickle, and for public types the
dataclass API (`fields`, `replace`, `asdict`). `Route` is
compared with a reference `@dataclass` of the same fields.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass
from typing import Any

import pytest

from parsers.families.base import CallArgs, CallBegin, CallEnd, ScanStep, Text
from parsers.plan import ParsePlan
from parsers.registry import TOOL_PARSERS
from parsers.routing import Route
from parsers.settings import ParserSettings
from parsers.types import (
    Delta,
    ParsedMessage,
    ToolCall,
    ToolCallDelta,
    args_delta,
    content_delta,
    make_delta,
    reasoning_delta,
    tool_call,
)


@dataclass(frozen=True)
class RefRoute:
    kind: str
    family: str | None
    generation: int


# (built, reference) from the same arguments
PAIRS = [
    (tool_call("call-1", "f", '{"a": 1}'), ToolCall("call-1", "f", '{"a": 1}')),
    (args_delta(2, "{"), ToolCallDelta(2, arguments="{")),
    (content_delta("hi"), Delta("hi")),
    (reasoning_delta("think"), Delta(None, "think")),
    (
        make_delta("a", "b", [args_delta(0, "x")]),
        Delta("a", "b", [ToolCallDelta(0, None, None, "x")]),
    ),
    (Route("parser_v2", "qwen3", 2), RefRoute("parser_v2", "qwen3", 2)),
]


def values(obj: Any) -> tuple[Any, ...]:
    return tuple(getattr(obj, name) for name in obj.__match_args__)


@pytest.mark.parametrize(("new", "ref"), PAIRS, ids=lambda o: type(o).__name__)
def test_repr_and_fields_as_the_dataclass(new: Any, ref: Any) -> None:
    assert repr(new) == repr(ref).replace(type(ref).__name__, type(new).__name__, 1)
    assert new.__match_args__ == ref.__match_args__
    assert values(new) == values(ref)
    assert (new == ref) is (type(new) is type(ref))


@pytest.mark.parametrize(("new", "ref"), PAIRS, ids=lambda o: type(o).__name__)
def test_equality_hash_and_immutability(new: Any, ref: Any) -> None:
    twin = copy.copy(new)
    assert twin == new and twin is not new
    name = new.__match_args__[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(new, name, "changed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(new, name)
    try:
        expected = hash(ref)
    except TypeError:  # a list field: unhashable in both
        with pytest.raises(TypeError):
            hash(new)
    else:
        assert hash(new) == expected


@pytest.mark.parametrize(("new", "ref"), PAIRS, ids=lambda o: type(o).__name__)
def test_copy_and_pickle_round_trip(new: Any, ref: Any) -> None:
    for clone in (copy.deepcopy(new), pickle.loads(pickle.dumps(new))):
        assert clone == new and type(clone) is type(new)


def test_fields_differ_means_unequal() -> None:
    assert ToolCall("a", "f", "{}") != ToolCall("b", "f", "{}")
    assert Text("x") != Text("x", "reasoning")
    assert CallBegin("f") != CallBegin("f", "id-1")
    assert CallEnd() == CallEnd(True, "") != CallEnd(False, "")
    assert CallArgs("{") != CallArgs("}")


def test_default_list_is_new_per_instance() -> None:
    first, second = Delta("a"), Delta("b")
    assert first.tool_calls == [] and first.tool_calls is not second.tool_calls
    assert Delta(tool_calls=None).tool_calls is None  # as the dataclass: None is a value
    assert ParsePlan("parser_v2", "qwen3", "hermes", None).tools == ()


def test_scan_step_is_mutable_and_unhashable() -> None:
    new = ScanStep([Text("a")], "done", "r")
    assert (
        repr(new) == "ScanStep(events=[Text(text='a', channel='content')], status='done', rest='r')"
    )
    new.status = "more"
    assert new == ScanStep([Text("a")], "more", "r")
    with pytest.raises(TypeError):
        hash(new)


@pytest.mark.parametrize(
    "obj",
    [
        ToolCall("c", "f", "{}"),
        Delta("x"),
        ParsedMessage("hi", None, [ToolCall("c", "f", "{}")], "stop", "parser_v2"),
        ParserSettings(version="2", tool_parser="hermes"),
        Route("parser_v2", "qwen3", 2),
        ParsePlan("parser_v2", "qwen3", "hermes", "qwen3", tool_mode="required"),
    ],
    ids=lambda o: type(o).__name__,
)
def test_public_types_keep_the_dataclass_api(obj: Any) -> None:
    assert dataclasses.is_dataclass(obj)
    names = [f.name for f in dataclasses.fields(obj)]
    assert tuple(names) == obj.__match_args__
    assert dataclasses.asdict(obj) == {n: dataclasses.asdict(obj)[n] for n in names}
    first = names[0]
    changed = dataclasses.replace(obj, **{first: None})
    assert getattr(changed, first) is None and changed != obj
    assert dataclasses.replace(obj) == obj


def test_registry_entries_compare_by_value() -> None:
    hermes, qwen3 = TOOL_PARSERS["hermes"], TOOL_PARSERS["qwen3"]
    assert hermes == qwen3 and hash(hermes) == hash(qwen3)  # the alias names the same grammar
    assert hermes.family != TOOL_PARSERS["glm47"].family
