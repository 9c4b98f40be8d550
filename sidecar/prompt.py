"""Prompt rendering with sandboxed Jinja2 chat templates (built-in per family, or a file).

Templates see the Hugging Face chat-template variables (`messages`, `tools`,
`add_generation_prompt`, `bos_token`, `raise_exception`, `tojson`) plus `enable_thinking`
(the request's resolved thinking switch) and the request's `chat_template_kwargs`.

The built-in templates index messages and tools as `m['role']`, not `m.role`: in the sandbox,
`.role` on a dict first fails an attribute lookup (an exception) per access, which made
rendering about a third slower.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from parsers.settings import family_by_key
from sidecar.errors import APIError, bad_request


class TemplateError(Exception):
    """A chat template that cannot be loaded (startup) — the message names the file."""


GENERIC_TEMPLATE = "chatml.jinja"  # no family configured


def builtin_name(family: str | None, tool_parser: str | None) -> str:
    """The built-in template file the family declares (`Family.chat_template`, or its tool
    parser's variant); the generic ChatML one without a family."""
    found = family_by_key(family)
    return found.template_for(tool_parser) if found is not None else GENERIC_TEMPLATE


def _raise(message: str) -> NoReturn:
    raise jinja2.TemplateError(message)


def _tojson(value: Any, indent: int | None = None) -> str:
    # HF templates expect plain JSON (no HTML escaping, non-ASCII kept).
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _arguments(value: Any) -> Any:
    """Assistant tool-call arguments arrive as a JSON string; templates want the object."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False
    )
    env.filters["tojson"] = _tojson
    env.filters["from_json"] = _arguments
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, Mapping))


def _normalize(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        m = dict(message)
        m["content"] = _text(message.get("content"))
        if m["role"] == "developer":
            m["role"] = "system"
        m["tool_calls"] = [
            {**call, "function": {**fn, "arguments": _arguments(fn.get("arguments"))}}
            for call in message.get("tool_calls") or []
            if isinstance(call, Mapping) and isinstance(fn := call.get("function"), Mapping)
        ]
        out.append(m)
    return out


class ChatTemplate:
    def __init__(self, source: str, name: str, family: str | None) -> None:
        self.name = name
        self.family = family
        try:
            self._template = _environment().from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(f"chat template {name}: line {exc.lineno}: {exc.message}") from None
        # The globals merged once: `Template.render` rebuilds this dict from a ChainMap on
        # every call, a third of the rendering time of a short conversation. That path uses
        # Jinja internals (`root_render_func`, `new_context`, `handle_exception`): only on
        # the tested Jinja releases (`JINJA_TESTED`, pinned in pyproject.toml), else
        # `Template.render`.
        self._globals = dict(self._template.globals)
        self._fast = jinja_internals_usable(self._template)

    @classmethod
    def builtin(cls, family: str | None, tool_parser: str | None) -> ChatTemplate:
        name = builtin_name(family, tool_parser)
        source = resources.files("sidecar.templates").joinpath(name).read_text("utf-8")
        return cls(source, f"built-in {name}", family)

    @classmethod
    def from_file(cls, path: Path, family: str | None) -> ChatTemplate:
        return cls(read_template_file(path), str(path), family)

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        thinking: bool,
        template_kwargs: Mapping[str, Any] | None = None,
        prepared: bool = False,
    ) -> str:
        """The prompt text; a template that rejects the conversation is a 400. `prepared`:
        the messages are already in the template's shape (`sidecar.request` makes them so)."""
        context: dict[str, Any] = {
            **self._globals,
            **(template_kwargs or {}),
            "messages": messages if prepared else _normalize(messages),
            "tools": tools or None,
            "add_generation_prompt": True,
            "enable_thinking": thinking,
            "family": self.family,
        }
        template = self._template
        try:
            if not self._fast:
                return template.render(context)
            try:
                # What `Template.render` does, with the globals already in `context`.
                return "".join(template.root_render_func(template.new_context(context, True)))
            except Exception:
                template.environment.handle_exception()  # re-raises (template lines in traceback)
        except jinja2.TemplateError as exc:
            raise bad_request(f"chat template rejected the messages: {exc}", "messages") from None
        except RecursionError:
            raise bad_request(
                "chat template failed on these messages: they nest too deeply for it", "messages"
            ) from None
        except Exception as exc:
            # The template rendered the sample conversation at startup (`check_template`), so
            # what fails now fails on this request's content: `{{ 1/0 }}` on some text, a
            # `range` over a number from the request, a macro recursing over its arguments.
            raise APIError(
                400, f"chat template failed on these messages: {exc!r}", param="messages"
            ) from None


JINJA_TESTED = ((3, 1), (3, 2))  # Jinja releases whose internals `render` was tested with


def jinja_internals_usable(template: jinja2.Template) -> bool:
    """Whether this Jinja is a tested release with the internals the fast render uses."""
    parts = tuple(int(p) for p in jinja2.__version__.split(".")[:2] if p.isdigit())
    low, high = JINJA_TESTED
    return (
        len(parts) == 2
        and low <= parts < high
        and callable(getattr(template, "root_render_func", None))
        and callable(getattr(template, "new_context", None))
        and callable(getattr(template.environment, "handle_exception", None))
    )


def read_template_file(path: Path) -> str:
    """A template file's text; anything but a readable regular UTF-8 file is refused at once
    (opened non-blocking: a FIFO or a device never blocks startup)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise TemplateError(f"--chat-template {path}: cannot read: {exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TemplateError(f"--chat-template {path}: not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read()
    except OSError as exc:
        raise TemplateError(f"--chat-template {path}: cannot read: {exc}") from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateError(f"--chat-template {path}: not UTF-8 text: {exc}") from None


SAMPLE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
SAMPLE_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The user wants the weather; call the tool.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 1}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 21}'},
    {"role": "assistant", "content": "It is 21 degrees in Paris."},
    {"role": "user", "content": "Thanks!"},
]


def check_template(template: ChatTemplate) -> None:
    """Render a sample conversation with a tool call and reasoning, thinking on and off; a
    template that fails on it is a `TemplateError` (startup stops)."""
    for thinking in (True, False):
        try:
            template.render(SAMPLE_MESSAGES, SAMPLE_TOOLS, thinking=thinking)
        except APIError as exc:
            raise TemplateError(
                f"chat template {template.name} fails on a sample conversation with tools "
                f"(thinking {'on' if thinking else 'off'}): {exc.message}"
            ) from None
