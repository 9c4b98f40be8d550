"""Whole-output batch path: a response whose entire text is known, parsed
without the streaming machinery, with exactly the runner's result.

`parsers.api.parse_text` (behind `parsers.parse` and the sidecar's `parse_whole`) tries
`parse_batch` first and feeds the runner when it returns None. The path walks the output with
the machine's own marker tables (`machine.marker_tables_for`) and quote tracker, one regex
search per marker (prose between markers is never looked at character by character), and
lets the family's batch grammar (`ToolGrammar.batch_call`, declared in the family module) read
each call region whole. It builds the `ParsedMessage` directly: no events, deltas or emitter.

Channel families (Kimi K3, Muse) whose machine is not a marker machine read the whole output
with their own reader instead (`ChannelGrammar.batch_message`, in the family module).

It decides only what it is certain of and returns None (the runner parses it: a fallback, never a
guess) for everything else: generation 1, forced tool choices (`required`, named), shapes a
channel family's reader does not take, a family without a batch grammar, any call region its
grammar does not fully read (cut off, escapes, unusual shapes, a start marker that turns out
to be prose).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from parsers.atomic import atomic
from parsers.families import reasoning_grammar, tool_grammar
from parsers.families.base import (
    CallContext,
    ChannelGrammar,
    ToolGrammar,
)
from parsers.ids import IdFactory
from parsers.machine import marker_tables_for
from parsers.plan import ParsePlan, ToolMode
from parsers.scan import MarkerSet, QuoteTracker
from parsers.types import ParsedMessage, tool_call

if TYPE_CHECKING:
    from parsers.machine import _Tables

_WS = " \t\r\n"
_NO_TOOLS = CallContext()  # (immutable: shared by every response that declares no tools)
_NON_BLANK = re.compile(r"[^ \t\r\n]")


class BatchPath:
    """The switch (tests compare on and off, `tests/parsers/test_batch.py`)."""

    whole_fast = True


def parse_batch(
    plan: ParsePlan, text: str, finish_reason: str, id_factory: IdFactory
) -> ParsedMessage | None:
    """The runner's message for the whole output `text`, or None when this path does not
    decide it (see the module docstring)."""
    if not BatchPath.whole_fast or plan.route != "parser_v2":
        return None
    if plan.parse_tools and plan.tool_mode in ("required", "named"):
        return None  # forced choices: guided JSON and the answer-start rules stay the runner's
    config = _config(
        plan.tool_parser,
        plan.reasoning_parser,
        plan.parse_tools,
        plan.tool_mode,
        plan.reasoning_channel,
        plan.start_in_reasoning,
    )
    if config is None:
        channel = _channel(plan.tool_parser, plan.reasoning_parser)
        if channel is None:
            return None
        ctx = CallContext.from_tools(plan.tools) if plan.tools else _NO_TOOLS
        found = channel.batch_message(plan, text, ctx)
    else:
        found = _walk(plan, text, *config)
    if found is None:
        return None
    content, reasoning_text, calls = found
    emit = plan.tool_mode != "none"  # `none` (V2): call markup consumed, no call emitted
    tool_calls = [
        tool_call(native or id_factory(), name, args) for native, name, args in calls if emit
    ]
    return ParsedMessage(
        content="".join(content) or None,
        reasoning_content="".join(reasoning_text) or None,
        tool_calls=tool_calls,
        # `length` stays: the runner's rule (`Runner.finish`)
        finish_reason="tool_calls" if tool_calls and finish_reason != "length" else finish_reason,
        route=plan.route,
    )


@lru_cache(maxsize=64)
def _channel(tool_parser: str | None, reasoning_parser: str | None) -> ChannelGrammar | None:
    """The channel family's grammar the runner would build a machine of, if any
    (`runner.build_machine`'s choice)."""
    tool_g = tool_grammar(tool_parser) if tool_parser else None
    reasoning_g = reasoning_grammar(reasoning_parser) if reasoning_parser else None
    return next((g for g in (tool_g, reasoning_g) if isinstance(g, ChannelGrammar)), None)


@lru_cache(maxsize=256)
def _config(
    tool_parser: str | None,
    reasoning_parser: str | None,
    parse_tools: bool,
    tool_mode: ToolMode,
    reasoning_channel: bool,
    start_in_reasoning: bool,
) -> tuple[ToolGrammar | None, bool, _Tables] | None:
    """What the walk needs for one grammar configuration (shared: `parse_batch` runs per
    response): the tool grammar, whether reasoning markup is stripped, the machine's marker
    tables; None when this path does not apply (channel families, no batch grammar)."""
    plan = ParsePlan(
        "parser_v2",
        None,
        tool_parser,
        reasoning_parser,
        tool_mode=tool_mode,
        parse_tools=parse_tools,
        start_in_reasoning=start_in_reasoning,
        reasoning_channel=reasoning_channel,
    )
    tool_g = tool_grammar(tool_parser) if tool_parser else None
    reasoning_g = reasoning_grammar(reasoning_parser) if reasoning_parser else None
    # a channel family's machine (`runner.build_machine`): walked when it is a marker machine
    channel = next((g for g in (tool_g, reasoning_g) if isinstance(g, ChannelGrammar)), None)
    if channel is not None:
        grammars = channel.batch_grammars(plan)
        if grammars is None:
            return None
        tool, reasoning = grammars
    else:
        assert not isinstance(tool_g, ChannelGrammar)
        assert not isinstance(reasoning_g, ChannelGrammar)
        tool, reasoning = tool_g, reasoning_g
    if tool is not None and parse_tools and type(tool).batch_call is ToolGrammar.batch_call:
        return None  # no batch grammar for this family
    strip_reasoning = not (reasoning is not None and reasoning_channel)
    return tool, strip_reasoning, marker_tables_for(plan, 2, tool, reasoning)


def _walk(
    plan: ParsePlan,
    text: str,
    tool: ToolGrammar | None,
    strip_reasoning: bool,
    tables: _Tables,
) -> tuple[list[str], list[str], list[tuple[str | None, str, str]]] | None:
    """Content pieces, reasoning pieces and calls: `MarkerMachine._scan_text` (V2) over the
    whole output at once, end of output included; None at anything it leaves to the runner."""
    (starts, opens, closes, ends, markers, _, _, lead_opens, stray, pairing) = tables
    content: list[str] = []
    thought: list[str] = []
    calls: list[tuple[str | None, str, str]] = []
    ctx: CallContext | None = None
    quotes = QuoteTracker()
    n = len(text)
    pos = 0  # start of the text not yet taken (the machine's `data`)
    in_reasoning = not strip_reasoning and plan.start_in_reasoning
    if in_reasoning and lead_opens:
        # output that starts inside reasoning may still begin with the opener: markup
        j = pos
        while j < n and text[j] in _WS:
            j += 1
        opener = lead_opens.match_at(text, j)
        if opener is not None:
            pos = j + len(opener)
    after_call = False
    paired = 0
    while pos < n:
        if after_call and not in_reasoning:
            first = _NON_BLANK.search(text, pos)
            if first is None:
                break  # blanks between the last call and the end of output: markup
            after_call = False
        out = thought if in_reasoning else content
        mode = "reasoning" if in_reasoning else "content"
        mset = markers[mode]
        find = mset.pattern.search
        search = pos  # where the next marker is looked for (after quoted ones)
        fed = pos  # the quote tracker has seen text[:fed]
        fresh = True  # the tracker is as reset at `fed`, has seen nothing since
        rechecks = 0  # quoted markers decided by `_prose` since `fed` (each re-reads from it)
        while True:
            m = find(text, search)
            if m is None:
                cut = _cut_marker(text, mset, quotes, search, fed)
                if cut > pos:
                    out.append(text[pos:cut])
                return content, thought, calls
            start, end = m.span()
            marker = m.group()
            shape = None
            if fresh and rechecks < _RECHECKS and marker not in pairing:
                shape = _prose(text[fed:start])
            if shape is not None:
                # decided without the tracker (it stays unfed: a reset follows an unquoted
                # marker; a quoted one is prose, seen again by the next check)
                if shape.group("open") is not None:
                    # the state before the open span is closed and the span starts with a
                    # backtick (no previous character matters): the next check starts there
                    fed += shape.start("open")
                    rechecks += 1
                    search = end
                    continue
            else:
                fresh = False
                before, fed = text[fed:start], start
                if quotes.quotes_marker(before, marker):
                    search = fed = end
                    continue
            if marker in starts:
                cut = start
                while cut > pos and text[cut - 1] in _WS:
                    cut -= 1
                if cut > pos:
                    out.append(text[pos:cut])
                assert tool is not None
                if ctx is None:
                    ctx = CallContext.from_tools(plan.tools) if plan.tools else _NO_TOOLS
                region = tool.batch_call(text, end, marker, ctx)
                if region is None:
                    return None
                calls += region[0]
                pos = region[1]
                in_reasoning = False
                after_call = True
                if not fresh:
                    quotes.reset()
                break
            if marker in pairing:
                # a tag opener in prose: text, and the next out-of-place close pairs it
                paired += 1
                quotes.feed(marker)
                search = fed = end
                continue
            if start > pos:
                out.append(text[pos:start])
            if not fresh:
                quotes.reset()
            pos = end
            if marker in stray[mode]:
                if paired:
                    paired -= 1
                    out.append(marker)
            elif in_reasoning and marker in ends:
                in_reasoning = False
                pos = start  # the marker is answer text
            elif not in_reasoning and marker in opens and not strip_reasoning:
                in_reasoning = True
            elif in_reasoning and marker in closes:
                in_reasoning = False
            break
    return content, thought, calls


# Prose after which a fresh `QuoteTracker` (as reset) is certainly not quoted (group `open` None)
# or certainly inside an inline code span (`open` set), in the shapes common prose has: text
# without quote characters, a `'` or `"` right after a letter or digit (`I'm`: not an
# opener), a closed (or newline-ended) "..." after anything else, a closed (or newline-ended)
# single-backtick code span; `open`: a single-backtick span still open at the end (no marker
# starts with a backtick, so it opens). `[^\W_]` is `str.isalnum`. No match (an open quote,
# `'...'`, fences, double backticks, ...): the tracker itself decides. The run of plain text
# is spelled as ranges (every code point but `"`, `'`, `` ` ``): `re` tests a range class
# faster than a negated list of literals, 2-5% of a whole bench parse.
_prose = re.compile(
    atomic(
        r"""(?:[\x00-!#-&(-_a-\U0010ffff]+|(?<=[^\W_])['"]|(?<![^\W_])"[^"\n]*["\n]"""
        r"""|`(?!`)[^`\n]*(?:`(?!`)|\n))*""",
        "prose",
    )
    + r"""(?P<open>`(?!`)[^`\n]*)?\Z"""
).match
prose_shape = _prose  # (for the channel families' readers)
# Quoted markers `_prose` decides per stretch of prose before the tracker takes over (each
# check re-reads the stretch: bounded, so many quoted markers stay linear)
_RECHECKS = 8


def _cut_marker(text: str, mset: MarkerSet, quotes: QuoteTracker, search: int, fed: int) -> int:
    """End of output: where a marker cut by it starts (markup, dropped), else len(text);
    `MarkerMachine._cut_marker`'s rule."""
    n = len(text)
    cut = mset.holdback(text, search)
    if n - cut < 3 or not any(c.isalpha() for c in text[cut:]):
        return n
    probe = quotes.copy()
    probe.feed(text[fed:cut])
    return n if probe.quoted(text[cut]) else cut
