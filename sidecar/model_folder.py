"""What the sidecar reads from the Hugging Face model folder the engine serves.

The chat template(s) and the special tokens, found as transformers finds them when it loads
the folder's tokenizer:

- templates: `chat_template.jinja` (the "default") and `additional_chat_templates/*.jinja`
  (named by file stem); when the folder has none of those files, `tokenizer_config.json`'s
  `chat_template`, a string or a list of `{"name", "template"}`;
- special tokens: `bos_token`, `eos_token`, `unk_token`, `sep_token`, `pad_token`,
  `cls_token`, `mask_token` and any other `*_token` entry of `tokenizer_config.json` (a
  string, or an added-token object whose `content` is the text), plus the named
  `extra_special_tokens`; `special_tokens_map.json` fills those the config leaves unset.

Each template is given to the renderer as the variable of the same name
(`{{ bos_token }}`). Errors name the file and what is wrong with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHAT_TEMPLATE_FILE = "chat_template.jinja"
TEMPLATE_DIR = "additional_chat_templates"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
NAMED_TOKENS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)


class ModelFolderError(Exception):
    """A model folder the sidecar cannot read; the message names the file."""


@dataclass(frozen=True)
class ModelFolder:
    path: Path
    # template name -> source; one unnamed template is stored as "default"
    templates: dict[str, str] = field(default_factory=dict)
    template_files: dict[str, str] = field(default_factory=dict)  # name -> where it was read
    special_tokens: dict[str, str] = field(default_factory=dict)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"{path}: cannot read: {exc}") from None


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(_read_text(path))
    except ValueError as exc:
        raise ModelFolderError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ModelFolderError(f"{path}: must hold a JSON object")
    return data


def _token_text(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    raise ModelFolderError(f"{where}: a special token must be a string or an object with 'content'")


def _special_tokens(
    config: dict[str, Any], legacy: dict[str, Any] | None, folder: Path
) -> dict[str, str]:
    tokens: dict[str, str] = {}
    where = str(folder / TOKENIZER_CONFIG)
    for key, value in config.items():
        if key in NAMED_TOKENS or (key.endswith("_token") and isinstance(value, str | dict)):
            text = _token_text(value, f"{where}: {key}")
            if text is not None:
                tokens[key] = text
    extra = config.get("extra_special_tokens")
    if isinstance(extra, dict):
        for key, value in extra.items():
            text = _token_text(value, f"{where}: extra_special_tokens.{key}")
            if text is not None:
                tokens[str(key)] = text
    for key, value in (legacy or {}).items():
        if key in NAMED_TOKENS and not tokens.get(key):
            text = _token_text(value, f"{folder / SPECIAL_TOKENS_MAP}: {key}")
            if text is not None:
                tokens[key] = text
    return tokens


def _config_templates(config: dict[str, Any], where: Path) -> dict[str, str]:
    value = config.get("chat_template")
    if value is None:
        return {}
    if isinstance(value, str):
        return {"default": value}
    if isinstance(value, list):
        out = {}
        for i, entry in enumerate(value):
            if not (
                isinstance(entry, dict)
                and isinstance(entry.get("name"), str)
                and isinstance(entry.get("template"), str)
            ):
                raise ModelFolderError(
                    f"{where}: chat_template[{i}] must be an object with string 'name' and "
                    "'template'"
                )
            out[entry["name"]] = entry["template"]
        return out
    raise ModelFolderError(f"{where}: chat_template must be a string or a list of named templates")


def load_model_folder(path: Path) -> ModelFolder:
    """The templates and special tokens of a model folder; `ModelFolderError` names what is
    unreadable."""
    if not path.is_dir():
        raise ModelFolderError(f"{path}: not a directory")
    config_path = path / TOKENIZER_CONFIG
    config = _read_json(config_path) or {}
    legacy = _read_json(path / SPECIAL_TOKENS_MAP)
    templates: dict[str, str] = {}
    files: dict[str, str] = {}
    single = path / CHAT_TEMPLATE_FILE
    if single.is_file():
        templates["default"] = _read_text(single)
        files["default"] = str(single)
    extra_dir = path / TEMPLATE_DIR
    if extra_dir.is_dir():
        for file in sorted(extra_dir.glob("*.jinja")):
            name = file.name.removesuffix(".jinja")
            templates[name] = _read_text(file)
            files[name] = str(file)
    if not templates:  # template files take priority over the config's entries
        templates = _config_templates(config, config_path)
        named = set(templates) != {"default"}
        files = {
            name: f"{config_path} chat_template" + (f"[{name}]" if named else "")
            for name in templates
        }
    return ModelFolder(path, templates, files, _special_tokens(config, legacy, path))
