"""The reference prompt: transformers' own renderer, on messages prepared as vLLM's chat server
prepares them (written here from vLLM's rules, independently of `sidecar.request`).

vLLM's rules: `reasoning_content` is read as `reasoning`; content is text parts joined with a
newline (or, for a template that loops over content, a list of text parts; tool results stay
strings); an assistant turn keeps `tool_calls` only when there are calls, each call as
`{id, function: {arguments, name}, type}` with its arguments decoded from JSON (an empty
object when they are not JSON); reasoning is passed as `reasoning` and `reasoning_content`;
`tool_call_id` on tool results, `name` when a string; tools as dumped by vLLM's request model
(`description` and `parameters` null when absent); `reasoning_effort` passed when set, with
`enable_thinking` unless the kwargs set it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def make_model_folder(
    folder: Path,
    template: str | list[dict[str, str]] | None,
    *,
    in_config: bool = False,
    extra_tokens: Mapping[str, str] | None = None,
) -> Path:
    """A Hugging Face model folder (tokenizer only) made with transformers: `<s>`/`</s>` as
    BOS/EOS, the template in chat_template.jinja (or, `in_config`, in tokenizer_config.json:
    a string or a list of named templates)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<pad>": 3}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()  # type: ignore[assignment]
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        chat_template=template if isinstance(template, str) and not in_config else None,
        **dict(extra_tokens or {}),
    )
    tokenizer.save_pretrained(str(folder))
    if in_config and template is not None:
        config_path = folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["chat_template"] = template
        config_path.write_text(json.dumps(config), encoding="utf-8")
    return folder


def _parts(content: Any) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    return [p.get("text") for p in content if p.get("text") is not None]


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, dict | list) else {}


def vllm_messages(
    messages: Sequence[Mapping[str, Any]], content_format: str = "string"
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for raw in messages:
        msg = dict(raw)
        legacy = msg.pop("reasoning_content", None)
        if legacy is not None and msg.get("reasoning") is None:
            msg["reasoning"] = legacy
        role = msg["role"]
        texts = _parts(msg.get("content"))
        content: Any = "\n".join(texts)
        if content_format == "openai" and role != "tool":
            content = [{"type": "text", "text": t} for t in texts]
        m: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            calls = msg.get("tool_calls")
            if calls:
                m["tool_calls"] = [
                    {
                        **({"id": c["id"]} if "id" in c else {}),
                        "function": {
                            "arguments": _arguments(c["function"].get("arguments")),
                            "name": c["function"]["name"],
                        },
                        "type": "function",
                    }
                    for c in calls
                ]
            if msg.get("reasoning") is not None:
                m["reasoning"] = msg["reasoning"]
                m["reasoning_content"] = msg["reasoning"]
        elif role == "tool" and "tool_call_id" in msg:
            m["tool_call_id"] = msg["tool_call_id"]
        if isinstance(msg.get("name"), str):
            m["name"] = msg["name"]
        out.append(m)
    return out


def developer_as_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """vLLM (renderers/hf.py) for a template that never names `developer`: the role becomes
    `system`; a system message past the first position, or a second one, merges every system
    text ("\n\n" apart; text parts "\n" apart; empty ones left out) into one at the start."""
    out = [
        {k: v for k, v in m.items() if k != "tools"} | {"role": "system"}
        if m["role"] == "developer"
        else m
        for m in messages
    ]
    where = [i for i, m in enumerate(out) if m["role"] == "system"]
    if not where or where == [0]:
        return out
    texts = []
    for i in where:
        content = out[i].get("content")
        if isinstance(content, list):
            content = "\n".join(p["text"] for p in content if "text" in p)
        if content:
            texts.append(content)
    return [{"role": "system", "content": "\n\n".join(texts)}] + [
        m for m in out if m["role"] != "system"
    ]


def vllm_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    out = []
    for tool in tools:
        fn = dict(tool["function"])
        dumped = {
            "name": fn.pop("name"),
            "description": fn.pop("description", None),
            "parameters": fn.pop("parameters", None),
            **fn,
        }
        out.append({"type": "function", "function": dumped})
    return out


def reference(
    folder: Path,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    *,
    content_format: str = "string",
    chat_template: str | None = None,
    reasoning_effort: str | None = None,
    add_generation_prompt: bool = True,
    continue_final_message: bool = False,
    **kwargs: Any,
) -> str:
    """What transformers renders for the folder's tokenizer (or `chat_template`)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    variables = dict(kwargs)
    if reasoning_effort is not None:
        variables["reasoning_effort"] = reasoning_effort
        variables.setdefault("enable_thinking", reasoning_effort != "none")
    prepared = vllm_messages(messages, content_format)
    source = tokenizer.get_chat_template(chat_template, vllm_tools(tools))
    if "'developer'" not in source and '"developer"' not in source:
        prepared = developer_as_system(prepared)
    rendered = tokenizer.apply_chat_template(
        prepared,
        tools=vllm_tools(tools),
        chat_template=chat_template,
        tokenize=False,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
        **variables,
    )
    assert isinstance(rendered, str)
    return rendered
