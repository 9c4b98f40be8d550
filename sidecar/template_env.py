"""The Jinja environment chat templates run in, built as transformers builds it.

What a template can use is what transformers' chat-template renderer gives it, no more and
no less, so a model's own template renders here exactly as `apply_chat_template` renders it:

- an immutable sandbox with `trim_blocks` and `lstrip_blocks`, no autoescape, and no
  trailing newline kept (Jinja's default: the template's final newline is dropped);
- the loop-control extension (`{% break %}`, `{% continue %}`) and the `{% generation %}`
  block (rendered as its body; transformers uses it to mark assistant tokens);
- `tojson` with the keyword arguments of `json.dumps` it accepts (`ensure_ascii`, default
  false; `indent`; `separators`; `sort_keys`), in place of Jinja's HTML-escaping one;
- the globals `raise_exception(message)`, `strftime_now(format)`, a `dict` constructor and
  a `namespace` that refuses underscore-prefixed names.

Pure: compiling and inspecting templates; rendering is `sidecar.prompt`'s job.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import lru_cache
from typing import Any, Literal, NoReturn

import jinja2
import jinja2.ext
import jinja2.meta
import jinja2.nodes
import jinja2.parser
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment

ContentFormat = Literal["string", "openai"]


def raise_exception(message: str) -> NoReturn:
    raise jinja2.TemplateError(message)


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # Plain JSON: Jinja's own filter escapes <, >, & and ' for HTML.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class TemplateDict:
    """`dict(...)` and `dict.fromkeys(...)` in templates, without the type itself (whose
    attributes would reach past the sandbox)."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


def _check_name(name: object) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise jinja2.exceptions.SecurityError(
            f"chat templates cannot store underscore-prefixed attributes on a namespace, "
            f"got {name!r}"
        )


class TemplateNamespace(jinja2.utils.Namespace):
    """Jinja's `namespace`, refusing names starting with `_` (CPython internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:
        # Jinja's signature trick: `namespace(self=...)` stays a valid attribute name.
        self, rest = args[0], args[1:]
        attrs = dict(*rest, **kwargs)
        for name in attrs:
            _check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)


class GenerationBlock(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}`: renders its body."""

    tags = {"generation"}  # noqa: RUF012 - Jinja's own class attribute

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: Callable[[], str]) -> str:
        return caller()


def environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[GenerationBlock, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env


_ENV = environment()  # one environment: compiled templates share nothing mutable


def compile_template(source: str) -> jinja2.Template:
    """The compiled template; `jinja2.TemplateSyntaxError` when it does not compile."""
    return _ENV.from_string(source)


@lru_cache(maxsize=32)
def variables(source: str) -> frozenset[str]:
    """The names a template reads from its context (what request kwargs can set)."""
    return frozenset(jinja2.meta.find_undeclared_variables(_ENV.parse(source)))


# -- content format: how vLLM's chat server decides what a message's `content` is ----------
#
# A template that loops over a message's content (`{% for part in message['content'] %}`,
# the message taken from a loop over `messages` or a variable assigned from it) is given
# content as a list of `{"type": "text", "text": ...}` parts ("openai"); any other template
# is given a string ("string").


def _is_name(node: jinja2.nodes.Node, name: str) -> bool:
    return isinstance(node, jinja2.nodes.Name) and node.ctx == "load" and node.name == name


def _is_key(node: jinja2.nodes.Node, name: str, key: str) -> bool:
    if isinstance(node, jinja2.nodes.Getitem):
        return (
            _is_name(node.node, name)
            and isinstance(node.arg, jinja2.nodes.Const)
            and node.arg.value == key
        )
    if isinstance(node, jinja2.nodes.Getattr):
        return _is_name(node.node, name) and node.attr == key
    return False


def _reads(node: jinja2.nodes.Node, name: str, key: str | None = None) -> bool:
    """`name` (or `name[key]`), possibly filtered, tested or sliced."""
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _reads(node.node, name, key)
    if isinstance(node, jinja2.nodes.Test):
        return _reads(node.node, name, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _reads(node.node, name, key)
    return _is_key(node, name, key) if key else _is_name(node, name)


def _aliases(root: jinja2.nodes.Template, name: str) -> Iterator[str]:
    """`name` and every variable assigned from it, transitively."""
    yield name
    pending = deque([name])
    while pending:
        current = pending.popleft()
        for assign in root.find_all(jinja2.nodes.Assign):
            if not _reads(assign.node, current):
                continue
            if not isinstance(assign.target, jinja2.nodes.Name):
                raise ValueError("assignment to a tuple")  # vLLM's walk gives up here too
            if assign.target.name != current:
                pending.append(assign.target.name)


def _loop_targets(root: jinja2.nodes.Template, names: list[str], key: str | None) -> Iterator[str]:
    for loop in root.find_all(jinja2.nodes.For):
        if any(_reads(loop.iter, n, key) for n in names):
            if not isinstance(loop.target, jinja2.nodes.Name):
                raise ValueError("loop over a tuple")  # vLLM's walk gives up here too
            yield loop.target.name


@lru_cache(maxsize=32)
def content_format(source: str) -> ContentFormat:
    """'openai' when the template loops over a message's content, else 'string'."""
    try:
        root = _ENV.parse(source)
        messages = list(_aliases(root, "messages"))
        message_names = list(_loop_targets(root, messages, None))
        next(_loop_targets(root, message_names, "content"))
    except StopIteration:
        return "string"
    except Exception:  # a template the walk does not understand: vLLM's default
        return "string"
    return "openai"
