"""The family contract: what a model family module provides to the parse runner.

A family describes its output grammar once; both generations (V1 legacy jail and V2 unified
parser, a `Generation` of the same machines, `parsers.machine`) run it. See
docs/parsers-internals.md for how to add one.

Two shapes of family:

* Marker families (Hermes, Qwen3-Coder, GLM, DeepSeek DSML, Kimi K2, Gemma 4): free text with
  call regions that begin at a start marker. They subclass `ToolGrammar` (start markers, V1 jail
  end markers, an incremental `CallScanner` for the text after a start marker) and use a
  `ReasoningGrammar` (open/close markers). The machines do everything else: reasoning/content
  splitting, marker hold-back, quote awareness (V2), guided JSON, tool_choice filtering.
* Channel families (Kimi K3, Muse): the whole output is a channel grammar. They subclass
  `ChannelGrammar` and build their own `FamilyMachine` per request, reusing the shared
  utilities (`parsers.scan`, `parsers.jsonstream`, `parsers.schema`, `parsers.guided`).

Everything a family produces is a flat list of `Event`s; `parsers.emit.Emitter` turns events
into OpenAI deltas (ids, dense indexes, named filtering, V1 whole-call delivery).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from parsers.emit import Emitter
    from parsers.plan import ParsePlan
    from parsers.types import Delta

Channel = Literal["content", "reasoning"]
Generation = Literal[1, 2]
PIECE = 2048  # the longest chunk a machine is fed at once (the runner cuts longer ones)


# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text for the `content` or `reasoning_content` channel."""

    text: str
    channel: Channel = "content"


@dataclass(frozen=True, slots=True)
class CallBegin:
    """A call's name is complete. `id` is the model's native id (Kimi), else None (generated)."""

    name: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class CallArgs:
    """The next fragment of the current call's arguments JSON (canonical, see jsonstream)."""

    fragment: str


@dataclass(frozen=True, slots=True)
class CallEnd:
    """The current call is over.

    complete=False: the call was cut off (end of output, or malformed after its name went
    out). Its arguments are the fragments sent so far, never repaired (no closing text). `raw`
    is the call's own markup as the model wrote it; V1, which has not sent anything yet,
    returns it as content instead of the call (lossless).
    """

    complete: bool = True
    raw: str = ""


Event = Text | CallBegin | CallArgs | CallEnd


# --- per-request context ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallContext:
    """What a scanner may know about the request: declared tools (for schema typing)."""

    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # tool -> parameters

    @classmethod
    def from_tools(cls, tools: tuple[Mapping[str, Any], ...] | list[Any] | None) -> CallContext:
        from parsers.schema import tool_schemas

        return cls(tool_schemas(tools or ()))

    def param_schema(self, tool: str, key: str) -> Mapping[str, Any] | None:
        """The JSON schema of `tool`'s parameter `key`, or None when not declared."""
        params = self.schemas.get(tool)
        if not isinstance(params, Mapping):
            return None
        props = params.get("properties")
        if not isinstance(props, Mapping):
            return None
        found = props.get(key)
        return found if isinstance(found, Mapping) else None

    def is_string_param(self, tool: str, key: str) -> bool:
        """Whether `tool` declares `key` a string: its text is then the value as written,
        never read as JSON or retyped (docs/parsers.md "Arguments")."""
        from parsers.schema import is_string_type, schema_types

        # only a plain string: a nullable or union type still takes JSON (`null`, numbers)
        types = schema_types(self.param_schema(tool, key))
        return len(types) == 1 and is_string_type(types[0])

    def string_params(self, tool: str) -> frozenset[str]:
        """The keys `tool` declares strings."""
        params = self.schemas.get(tool)
        props = params.get("properties") if isinstance(params, Mapping) else None
        if not isinstance(props, Mapping):
            return frozenset()
        return frozenset(k for k in props if self.is_string_param(tool, k))

    def has_schema(self, tool: str) -> bool:
        return tool in self.schemas


# --- marker families ----------------------------------------------------------------------


ScanStatus = Literal["more", "done", "reject"]
# A call region read whole by a family's batch grammar (`ToolGrammar.batch_call`): its calls,
# each (native id or None for the id factory's, name, arguments JSON as the scanner streams
# it, joined), and the offset after the region
BatchCall = tuple[list[tuple[str | None, str, str]], int]


@dataclass(slots=True)
class ScanStep:
    """What a `CallScanner` returns for each `feed`/`finish`.

    status "more": the region goes on, feed more text.
    status "done": the region ended; `rest` is text after it (the runner scans it as content).
    status "reject": not a call after all (only allowed before any event was returned): the
        runner emits the start marker as text and re-scans `rest`, which must be exactly all
        text fed since the start marker.
    """

    events: list[Event]
    status: ScanStatus = "more"
    rest: str = ""


class CallScanner(ABC):
    """Incremental parser for one call region, fed the text that follows a start marker.

    Rules (the machines and the property tests rely on them):
    * Chunk invariance: the merged events, status and rest must not depend on how the input
      is split between `feed` calls.
    * Linear: never re-scan text already consumed; hold back only what may still change.
    * Early delivery (V2): `CallBegin` once the name is complete; string argument text as it
      arrives; a non-string value only once complete. Every concatenation of `CallArgs`
      fragments is a prefix of the final arguments JSON (use `parsers.jsonstream`).
    * `finish()` is end of output: return "done" (ending an open call with
      `CallEnd(complete=False, raw=...)`, nothing added to its JSON) or "reject" if nothing was
      emitted.
    """

    @abstractmethod
    def feed(self, text: str) -> ScanStep: ...

    @abstractmethod
    def finish(self) -> ScanStep: ...

    def stream(self, text: str) -> str | None:
        """Streaming fast path (V2): when `feed(text)` would only stream argument text (one
        `CallArgs(fragment)` or none, status "more"), do exactly what it does and return the
        fragment ("" for none); otherwise None, having changed nothing. The runner then skips
        the event and result objects (most of a few-character feed's cost). Optional."""
        return None


class ToolGrammar(ABC):
    """A marker family's tool-call grammar (one instance per canonical tool parser name)."""

    name: str  # canonical tool parser name, e.g. "hermes"
    start_markers: tuple[str, ...]  # text that opens a call region
    # An opener that the quoted-marker tests wrap in quotes (defaults to start_markers[0]).
    quoted_opener: str | None = None
    # Protocol tokens that are markup when they stand outside a call (an unpaired close or
    # section end, the end-of-message token): never content (docs/parsers.md "Content hygiene")
    stray_markers: tuple[str, ...] = ()
    # Tag openers that may stand in prose (a block the grammar does not read); each makes the
    # next out-of-place close text, paired with it, not markup
    pairing_openers: tuple[str, ...] = ()

    @abstractmethod
    def jail_end_markers(self, start: str) -> tuple[str, ...]:
        """V1: the jail opened by `start` ends right after the first of these markers."""

    @abstractmethod
    def scanner(self, start: str, ctx: CallContext) -> CallScanner:
        """A scanner for the region opened by the start marker `start`."""

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_call(self, text: str, pos: int, start: str, ctx: CallContext) -> BatchCall | None:
        """The complete call of the region opened by `start` whose text begins at `pos` of the
        whole output `text`, exactly as `scanner(start, ctx)` reads it (V2), with the offset
        after the region; None whenever that is not certain (the runner then parses the
        output). Default: no batch grammar, the runner parses every output of the family."""
        return None


def scanned_region(
    grammar: ToolGrammar, text: str, pos: int, start: str, ctx: CallContext
) -> BatchCall | None:
    """A batch grammar for any marker family: the family's own scanner fed the region up to
    its first V1 end marker at once. Decided only when the scanner ends the region there
    with complete calls and nothing else (no text, no cut-off or rejected call)."""
    ends = grammar.jail_end_markers(start)
    stop = -1
    for marker in ends:
        found = text.find(marker, pos)
        if found != -1 and (stop == -1 or found + len(marker) < stop):
            stop = found + len(marker)
    if stop == -1:
        return None
    res = grammar.scanner(start, ctx).feed(text[pos:stop])
    if res.status != "done":
        return None
    calls: list[tuple[str | None, str, str]] = []
    args: list[str] = []
    head: CallBegin | None = None
    for ev in res.events:
        kind = type(ev)
        if kind is CallArgs and head is not None:
            args.append(ev.fragment)  # type: ignore[union-attr]
        elif kind is CallBegin and head is None:
            head = ev  # type: ignore[assignment]
        elif kind is CallEnd and head is not None and ev.complete:  # type: ignore[union-attr]
            calls.append((head.id, head.name, "".join(args)))
            head = None
            args = []
        else:
            return None
    if head is not None or not calls:
        return None
    return calls, stop - len(res.rest)


@dataclass(frozen=True, slots=True)
class ReasoningGrammar:
    """A marker family's reasoning markers (one instance per canonical reasoning parser name).

    Whether output starts inside reasoning is the plan's decision (`ParsePlan.start_in_reasoning`,
    forced families and prompt prefill), not the grammar's.
    """

    name: str
    open_markers: tuple[str, ...]
    close_markers: tuple[str, ...]
    # Markers that end reasoning without belonging to it (Kimi K2.5: the tool section start),
    # also when no tool parser is configured: the text from the marker on is the answer.
    end_markers: tuple[str, ...] = ()
    # Protocol tokens that are markup wherever they stand outside a structure (message ends);
    # the close markers in the answer and the open markers inside reasoning are too.
    stray_markers: tuple[str, ...] = ()


# --- channel families (escape hatch) ------------------------------------------------------


class FamilyMachine(ABC):
    """A whole-output state machine for a channel family (one per request)."""

    @abstractmethod
    def feed(self, text: str) -> list[Event]: ...

    @abstractmethod
    def finish(self, reason: str = "stop") -> list[Event]: ...

    def fast_feed(
        self, emitter: Emitter, general: Callable[[str], list[Delta]]
    ) -> Callable[[str], list[Delta]]:
        """The runner's per-chunk function (`StreamParser.feed`): `general` is
        `emitter.push(self.feed(chunk))` with the runner's checks. A machine may return its
        own function that answers the common streaming chunks directly (same deltas, fewer
        objects: a few-character feed is mostly fixed costs) and calls `general` otherwise;
        it is used until `finish`."""
        return general


class ChannelGrammar(ABC):
    """A family whose whole output is a channel grammar (Kimi K3, Muse).

    Registered for its tool parser name and its reasoning parser name alike; `machine` gets the
    plan and decides from `plan.parse_tools`, `plan.reasoning`, `plan.start_in_reasoning` and
    `plan.tool_mode` what to do. For generation 1 it may return the same machine built without
    quote awareness: the `Emitter` already delivers V1 calls whole and turns incomplete calls
    (`CallEnd(complete=False, raw=...)`) back into content.
    """

    name: str
    quoted_opener: str | None = None  # the marker the quoted-opener tests wrap in quotes

    @abstractmethod
    def machine(self, plan: ParsePlan, generation: Generation, ctx: CallContext) -> FamilyMachine:
        """A fresh machine for one response."""

    # --- whole-output batch grammar (parsers.batch) ---
    def batch_grammars(
        self, plan: ParsePlan
    ) -> tuple[ToolGrammar | None, ReasoningGrammar | None] | None:
        """When `machine(plan, 2, ...)` is a plain `MarkerMachine`, its tool and reasoning
        grammars (the batch path then walks them); None (default) leaves every output of the
        family to the runner."""
        return None

    def batch_message(
        self, plan: ParsePlan, text: str, ctx: CallContext
    ) -> tuple[list[str], list[str], list[tuple[str | None, str, str]]] | None:
        """The family's own whole-output reader (when `batch_grammars` gives none): exactly
        what `machine(plan, 2, ctx)` makes of the whole output `text` (a plan that is not a
        forced choice): content pieces, reasoning pieces, calls (native id or None, name,
        arguments); None (default) for anything it does not decide: the runner parses it."""
        return None


AnyToolGrammar = ToolGrammar | ChannelGrammar
AnyReasoningGrammar = ReasoningGrammar | ChannelGrammar


class LazyGrammars(Mapping[str, AnyToolGrammar]):
    """A family's tool grammar table whose grammars are built on first lookup, by a function
    per name that imports its module: a process serving one grammar of a family (an isolated
    test's child, a deployment) does not import the others'."""

    def __init__(self, builders: Mapping[str, Callable[[], AnyToolGrammar]]) -> None:
        self._builders = builders
        self._built: dict[str, AnyToolGrammar] = {}

    def __getitem__(self, name: str) -> AnyToolGrammar:
        found = self._built.get(name)
        if found is None:  # setdefault: threads racing here all get the first one stored
            found = self._built.setdefault(name, self._builders[name]())
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)
