"""The prompt: a chat template rendered as transformers renders it, on messages prepared as
vLLM's chat server prepares them.

Which template: `--chat-template FILE`, else the model folder's own (`--tokenizer DIR` or a
`--model` folder: `sidecar.model_folder`), else the family's built-in (sidecar/templates).
A folder with several named templates serves `tool_use` to requests that declare tools (when
it has one) and `default` otherwise, as transformers chooses.

What a template sees (`sidecar.template_env` is the environment):

- `messages`: as `sidecar.request.prepare_messages` makes them; a template that loops over a
  message's content gets it as a list of text parts, any other a string (vLLM's "content
  format");
- `tools`: the request's tools, or none when it declares none; `documents`;
  `add_generation_prompt` (true);
- the model folder's special tokens (`bos_token`, `eos_token`, ...);
- the request's `chat_template_kwargs` as given (they override the special tokens);
  `reasoning_effort` when the request sets one (and `enable_thinking`, false for "none",
  unless the kwargs set it), as vLLM passes them; the sidecar's own thinking switch
  (`enable_thinking`, `thinking`) only when the request's `thinking` field or the deployment's
  `--default-thinking` sets it: otherwise the template's own default applies.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from parsers.settings import family_by_key
from sidecar import template_env
from sidecar.errors import APIError, bad_request
from sidecar.model_folder import ModelFolder
from sidecar.request import prepare_messages


class TemplateError(Exception):
    """A chat template that cannot be loaded (startup): the message names the file."""


GENERIC_TEMPLATE = "chatml.jinja"  # no family configured

# `apply_chat_template`'s own parameters: a kwarg of these names is not a template variable
# (transformers consumes it); `documents` is read as the template's `documents`.
_CONSUMED = frozenset(
    {
        "add_generation_prompt",
        "continue_final_message",
        "documents",
        "padding",
        "truncation",
        "max_length",
        "return_tensors",
        "return_dict",
        "return_assistant_tokens_mask",
        "tokenizer_kwargs",
        "sanitize_control_tokens",
    }
)
# kwargs that collide with what the renderer passes itself: vLLM refuses them.
_RESERVED = frozenset({"messages", "tools", "conversation", "chat_template", "tokenize"})
_EFFORT_UNSET = (None, "auto")  # reasoning_effort values vLLM does not pass on


def builtin_name(family: str | None, tool_parser: str | None) -> str:
    """The built-in template file the family declares (`Family.chat_template`, or its tool
    parser's variant); the generic ChatML one without a family."""
    found = family_by_key(family)
    return found.template_for(tool_parser) if found is not None else GENERIC_TEMPLATE


def request_variables(
    request_kwargs: Mapping[str, Any] | None,
    *,
    reasoning_effort: str | int | None = None,
    thinking: bool | None = None,
) -> dict[str, Any]:
    """The template variables a request sets: its `chat_template_kwargs` as given, vLLM's
    `reasoning_effort` (with `enable_thinking` unless the kwargs set it) and the sidecar's
    thinking switch (`thinking` not None: the request's `thinking` field or the deployment
    decided) where the kwargs leave them unset."""
    given = dict(request_kwargs or {})
    out = dict(given)
    if reasoning_effort not in _EFFORT_UNSET:
        out["reasoning_effort"] = reasoning_effort
    if reasoning_effort is not None and "enable_thinking" not in given:
        out["enable_thinking"] = reasoning_effort != "none"
    if thinking is not None:
        out.setdefault("enable_thinking", thinking)
        out.setdefault("thinking", thinking)
    return out


@dataclass(frozen=True)
class _Compiled:
    name: str  # where it was read, for messages
    template: jinja2.Template
    content_format: template_env.ContentFormat
    sha256: str
    fast: bool
    globals: dict[str, Any]
    developer: bool  # the template names the `developer` role (else it becomes `system`)
    names_content: bool  # the template's text holds `content` (a message can be continued)


def _compile(source: str, name: str) -> _Compiled:
    try:
        template = template_env.compile_template(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(
            f"chat template {name}: does not compile: line {exc.lineno}: {exc.message}"
        ) from None
    # The globals merged once: `Template.render` rebuilds this dict from a ChainMap on every
    # call, a third of the rendering time of a short conversation. That path uses Jinja
    # internals (`root_render_func`, `new_context`, `handle_exception`): only on the tested
    # Jinja releases (`JINJA_TESTED`, pinned in pyproject.toml), else `Template.render`.
    return _Compiled(
        name=name,
        template=template,
        content_format=template_env.content_format(source),
        sha256=hashlib.sha256(source.encode("utf-8")).hexdigest(),
        fast=jinja_internals_usable(template),
        globals=dict(template.globals),
        developer='"developer"' in source or "'developer'" in source,
        names_content="content" in source,
    )


class ChatTemplate:
    """One served template (or a folder's named set), with the model's special tokens."""

    def __init__(
        self,
        source: str | Mapping[str, str],
        name: str,
        special_tokens: Mapping[str, str] | None = None,
        *,
        files: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.special_tokens = dict(special_tokens or {})
        templates = {"default": source} if isinstance(source, str) else dict(source)
        files = files or {}
        self._named = not isinstance(source, str) and set(templates) != {"default"}
        self._compiled = {
            key: _compile(text, files.get(key, name if not self._named else f"{name} [{key}]"))
            for key, text in templates.items()
        }
        if not self._compiled or not ({"default", "tool_use"} & self._compiled.keys()):
            names = ", ".join(sorted(self._compiled)) or "none"
            raise TemplateError(
                f"chat template {name}: several named templates and no 'default' (names: {names})"
            )

    # -- where the template comes from -----------------------------------------------------

    @classmethod
    def builtin(
        cls,
        family: str | None,
        tool_parser: str | None,
        special_tokens: Mapping[str, str] | None = None,
    ) -> ChatTemplate:
        name = builtin_name(family, tool_parser)
        source = resources.files("sidecar.templates").joinpath(name).read_text("utf-8")
        return cls(source, f"built-in {name}", special_tokens)

    @classmethod
    def from_file(cls, path: Path, special_tokens: Mapping[str, str] | None = None) -> ChatTemplate:
        return cls(read_template_file(path), str(path), special_tokens)

    @classmethod
    def from_folder(cls, folder: ModelFolder) -> ChatTemplate:
        if not folder.templates:
            raise TemplateError(f"model folder {folder.path}: no chat template in it")
        return cls(
            folder.templates,
            str(folder.path),
            folder.special_tokens,
            files=folder.template_files,
        )

    def describe(self) -> str:
        """Where the served template(s) came from, with their sha256 (the startup log)."""
        return "; ".join(
            f"{key}={c.name} sha256={c.sha256}" if self._named else f"{c.name} sha256={c.sha256}"
            for key, c in sorted(self._compiled.items())
        )

    def _select(self, tools_declared: bool) -> _Compiled:
        compiled = self._compiled
        if tools_declared and "tool_use" in compiled:
            return compiled["tool_use"]
        if "default" in compiled:
            return compiled["default"]
        raise bad_request(
            f"chat template {self.name} has no 'default' template for a request without "
            "tools (names: " + ", ".join(sorted(compiled)) + ")",
            "tools",
        )

    # -- rendering ----------------------------------------------------------------------------

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        *,
        thinking: bool | None = None,
        template_kwargs: Mapping[str, Any] | None = None,
        reasoning_effort: str | int | None = None,
        parts: Sequence[Sequence[str]] | None = None,
        prepared: bool = False,
        add_generation_prompt: bool = True,
        continue_final_message: bool = False,
    ) -> str:
        """The prompt text; a template that rejects the conversation is a 400 naming its
        message. `prepared`: the messages come from `sidecar.request` (`parts`: each
        message's text parts); otherwise they are prepared here. `tools` None: the request
        declares none. `thinking`: the sidecar's switch, when the request or deployment set
        it. `continue_final_message`: the last message is left open (transformers' rule), with
        `add_generation_prompt` off."""
        if not prepared:
            messages, parts = prepare_messages(messages)
        compiled = self._select(tools is not None)
        if compiled.content_format == "openai":
            messages = _as_parts(messages, parts)
        if not compiled.developer and any(m.get("role") == "developer" for m in messages):
            messages = _developer_as_system(messages)
        kwargs = request_variables(
            template_kwargs, reasoning_effort=reasoning_effort, thinking=thinking
        )
        for key in kwargs.keys() & _RESERVED:
            raise bad_request(
                f"'chat_template_kwargs.{key}' is set by the server, not the request",
                f"chat_template_kwargs.{key}",
            )
        documents = kwargs.get("documents")
        if documents is not None and not (
            isinstance(documents, list) and all(isinstance(d, dict) for d in documents)
        ):
            raise bad_request(
                "'chat_template_kwargs.documents' must be a list of objects",
                "chat_template_kwargs.documents",
            )
        context: dict[str, Any] = {**compiled.globals, **self.special_tokens}
        for key, value in kwargs.items():
            if key not in _CONSUMED:
                context[key] = value
        context["messages"] = messages
        context["tools"] = list(tools) if tools is not None else None
        context["documents"] = documents
        context["add_generation_prompt"] = add_generation_prompt
        if not continue_final_message:
            return _render(compiled, context)
        context["messages"], final = _mark_final(messages, compiled)
        return _cut_at_mark(_render(compiled, context), final)


# transformers' marker for the end of the message to continue: appended to its text, found in
# the rendering, and the rendering cut there.
_CONTINUE_MARK = "CONTINUE_FINAL_MESSAGE_TAG "


def _mark_final(
    messages: list[dict[str, Any]], compiled: _Compiled
) -> tuple[list[dict[str, Any]], str]:
    """The messages with the mark after the last message's text, and that text."""
    last = messages[-1] if messages else {}
    content = last.get("content")
    if content is None:
        raise bad_request(
            'continue_final_message is set but the final message has no "content" to continue',
            "continue_final_message",
        )
    if not compiled.names_content:
        raise bad_request(
            'continue_final_message: the chat template never reads a message\'s "content"',
            "continue_final_message",
        )
    if isinstance(content, list):
        blocks = [dict(b) if isinstance(b, dict) else b for b in content]
        for block in reversed(blocks):
            if isinstance(block, dict) and "text" in block:
                final = block["text"]
                block["text"] = f"{final}{_CONTINUE_MARK}"
                break
        else:
            raise bad_request(
                "continue_final_message is set but the final message has no text to continue",
                "continue_final_message",
            )
        marked: Any = blocks
    else:
        final = content
        marked = f"{content}{_CONTINUE_MARK}"
    return [*messages[:-1], {**last, "content": marked}], str(final)


def _cut_at_mark(rendered: str, final: str) -> str:
    """The rendering up to the end of the continued message (transformers' rule: where the
    template trimmed the text, the trailing blanks go too)."""
    mark = _CONTINUE_MARK.strip()
    if final.strip() not in rendered or mark not in rendered:
        raise bad_request(
            "continue_final_message is set but the final message does not appear in the chat "
            "template's rendering (the template drops or rewrites it)",
            "continue_final_message",
        )
    at = rendered.rindex(mark)
    if rendered[at : at + len(_CONTINUE_MARK)] == _CONTINUE_MARK:
        return rendered[:at]
    return rendered[:at].rstrip()


def _developer_as_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """vLLM's rule for a template that never names the `developer` role: developer messages
    become `system` (without their `tools`), and when that leaves a system message after the
    first position, or more than one, every non-empty system text (text parts `"\n"` apart) is
    merged, `"\n\n"` apart, into one message at the start, its content a string."""
    converted = [
        {k: v for k, v in m.items() if k != "tools"} | {"role": "system"}
        if m.get("role") == "developer"
        else m
        for m in messages
    ]
    system = [i for i, m in enumerate(converted) if m.get("role") == "system"]
    if not system or system == [0]:
        return converted
    texts = []
    for i in system:
        content = converted[i].get("content")
        if isinstance(content, list):
            content = "\n".join(
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        if isinstance(content, str) and content:
            texts.append(content)
    rest = [m for m in converted if m.get("role") != "system"]
    return [{"role": "system", "content": "\n\n".join(texts)}, *rest]


def _as_parts(
    messages: list[dict[str, Any]], parts: Sequence[Sequence[str]] | None
) -> list[dict[str, Any]]:
    """Content as text parts (the "openai" content format); tool results stay strings."""
    out = []
    for i, message in enumerate(messages):
        if message.get("role") == "tool":
            out.append(message)
            continue
        texts = parts[i] if parts is not None else (message.get("content") or "",)
        out.append({**message, "content": [{"type": "text", "text": t} for t in texts]})
    return out


def _render(compiled: _Compiled, context: dict[str, Any]) -> str:
    template = compiled.template
    try:
        if not compiled.fast:
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
        # What fails here fails on this request's content: `{{ 1/0 }}` on some text, a
        # `range` over a number from the request, a macro recursing over its arguments.
        raise APIError(
            400, f"chat template failed on these messages: {exc!r}", param="messages"
        ) from None
    raise AssertionError("unreachable")  # handle_exception always raises


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
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "get_weather",
        "content": '{"temperature": 21}',
    },
    {"role": "assistant", "content": "It is 21 degrees in Paris."},
    {"role": "user", "content": "Thanks!"},
]


def check_template(template: ChatTemplate) -> str | None:
    """Render a sample conversation with a tool round trip and reasoning, with the template's
    own thinking default and with thinking on and off. None when it renders; otherwise the
    failure, for a warning: the template is still served (a request it fails on is a 400
    naming the template's message), as vLLM serves it."""
    for thinking in (None, True, False):
        try:
            template.render(SAMPLE_MESSAGES, SAMPLE_TOOLS, thinking=thinking)
        except APIError as exc:
            state = {None: "its default", True: "on", False: "off"}[thinking]
            return (
                f"chat template {template.name} fails on a sample conversation with tools "
                f"(thinking {state}): {exc.message}"
            )
    return None
