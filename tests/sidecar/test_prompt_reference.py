"""The prompt the sidecar sends its engine equals, byte for byte, what transformers renders
for the same model folder on messages prepared as vLLM's chat server prepares them.

Each template below is the team's own and exercises one feature of transformers' renderer or
one rule of vLLM's message preparation; `template_reference` renders the reference with
transformers itself (no torch needed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from sidecar.app import Sidecar, build_app
from sidecar.cli import _parser, configure, main
from sidecar.errors import APIError
from sidecar.fake_engine import FakeEngine, serve_in_thread
from sidecar.prompt import ChatTemplate, TemplateError, check_template
from sidecar.template_env import content_format
from tests.sidecar.template_reference import make_model_folder, reference

pytest.importorskip("transformers")

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": "Answer in French."},
    {"role": "user",
     "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Need the weather.",
        "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": "Zürich", "days": 2}'}},
            {"id": "call_2", "type": "function",
             "function": {"name": "get_weather", "arguments": "not json"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": '{"t": 21}'},
    {"role": "tool", "tool_call_id": "call_2",
     "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": "Il fait 21 degrés.", "tool_calls": []},
    {"role": "user", "content": "Grüße, 你好 <b>&</b>"},
]  # fmt: skip
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "now"}},
]  # fmt: skip

# -- the team's templates, one feature each ------------------------------------------------

BASIC = (
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}\n"
)  # the final newline is the template file's: not kept
TOJSON = (
    "{% for t in tools or [] %}{{ t | tojson(ensure_ascii=True, indent=2, separators=(',', ': '),"
    " sort_keys=True) }}\n{{ t.function | tojson }}\n{% endfor %}"
    "{% for m in messages %}{{ m | tojson }}\n{% endfor %}"
)
LOOP_CONTROLS = (
    "{% for m in messages %}{% if m.role == 'tool' %}{% continue %}{% endif %}"
    "{% if loop.index > 6 %}{% break %}{% endif %}{{ m.role }}:{{ m.content }};{% endfor %}"
)
GENERATION = (
    "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}[{{ m.content }}]"
    "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}"
)
DEFINED = (
    "{% for m in messages %}{{ m.role }}"
    "{% if m.tool_calls is defined %}[calls {{ m.tool_calls | length }}]{% endif %}"
    "{% if m.reasoning_content is defined %}[{{ m.reasoning_content }}|{{ m.thinking }}|"
    "{{ m.reasoning }}]{% endif %}{% if m.name is defined %}({{ m.name }}){% endif %}\n"
    "{% endfor %}enable_thinking defined: {{ enable_thinking is defined }}"
    "{% if enable_thinking is defined %}={{ enable_thinking }}{% endif %}\n"
    "tools none: {{ tools is none }}; effort: {{ reasoning_effort | default('unset') }}; "
    "flag: {{ custom_flag | default('unset') }}; bos: {{ bos_token }}"
)
CONTENT_PARTS = (
    "{% for message in messages %}{{ message.role }}:"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}[{{ part.type }}:{{ part.text }}]"
    "{% endfor %}{% endif %}\n{% endfor %}"
)
GLOBALS = (
    "{% set ns = namespace(users=0) %}{% for m in messages %}{% if m.role == 'user' %}"
    "{% set ns.users = ns.users + 1 %}{% endif %}{% endfor %}{{ ns.users }} users; "
    "{{ dict(a=1, b=[2]) | tojson }}; {{ dict.fromkeys(['x'], 0) | tojson }}; "
    "{{ strftime_now('%Y') | length }}"
)
DEVELOPER = (  # names the developer role, so vLLM passes it as given
    "{% for m in messages %}<|{{ m.role }}|>{% if m.role == 'developer' %}(dev){% endif %}"
    "{{ m.content }}\n{% endfor %}"
)
ARGUMENTS = (
    "{% for m in messages %}{% for c in m.tool_calls | default([]) %}"
    "{{ c.function.name }}({% for k, v in c.function.arguments.items() %}{{ k }}={{ v }},"
    "{% endfor %}) {{ c.function.arguments | tojson }}\n{% endfor %}{% endfor %}"
)

CASES: dict[str, str] = {
    "basic": BASIC,
    "developer": DEVELOPER,
    "tojson": TOJSON,
    "loop_controls": LOOP_CONTROLS,
    "generation": GENERATION,
    "defined": DEFINED,
    "content_parts": CONTENT_PARTS,
    "globals": GLOBALS,
    "arguments": ARGUMENTS,
}


def _sidecar(folder: Path, *flags: str) -> Sidecar:
    args = _parser("vllm").parse_args(
        ["--engine-url", "http://127.0.0.1:9", "--model", str(folder), *flags]
    )
    config, adapter, template = configure("vllm", args, {})
    return Sidecar(config, adapter, template)


def _sent(sidecar: Sidecar, **body: Any) -> str:
    return sidecar.prepare(json.dumps({"model": "m", **body}).encode())[2].prompt


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {name: make_model_folder(root / name, source) for name, source in CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("with_tools", [True, False])
def test_the_prompt_sent_equals_transformers(
    folders: dict[str, Path], name: str, with_tools: bool
) -> None:
    folder = folders[name]
    tools = TOOLS if with_tools else None
    fmt = content_format(CASES[name])
    expected = reference(folder, CONVERSATION, tools, content_format=fmt)
    body: dict[str, Any] = {"messages": CONVERSATION}
    if tools is not None:
        body["tools"] = tools
    assert _sent(_sidecar(folder), **body) == expected


def test_the_feature_templates_do_what_they_claim(folders: dict[str, Path]) -> None:
    """Each reference shows the feature it is there for (so the equality above tests it)."""

    def ref(name: str, **kw: Any) -> str:
        return reference(
            folders[name], CONVERSATION, TOOLS, content_format=content_format(CASES[name]), **kw
        )

    assert ref("basic").startswith("<s><|system|>") and ref("basic").endswith("<|assistant|>\n")
    assert "part one\npart two" in ref("basic")  # text parts joined with a newline
    # a template that never names `developer`: it becomes system, merged into the first one
    assert "<|developer|>" not in ref("basic")
    assert "<|system|>\nYou are terse.\n\nAnswer in French.</s>\n<|user|>" in ref("basic")
    assert "<|developer|>(dev)Answer in French." in ref("developer")  # named: as given
    assert '"description": null' in ref("tojson")
    assert '{\n  "function": {' in ref("tojson")  # indent, separators and sorted keys
    assert "Grüße, 你好 <b>&</b>" in ref("tojson")  # non-ASCII and HTML kept as they are
    assert ref("loop_controls").count(";") == 4 and "Grüße" not in ref("loop_controls")
    assert "[Il fait 21 degrés.]" in ref("generation")
    defined = ref("defined")
    assert "assistant[calls 2][Need the weather.|Need the weather.|Need the weather.]" in defined
    assert "toolassistantuser" in defined  # the turn with `tool_calls: []` has no such key
    assert "enable_thinking defined: False" in defined and "bos: <s>" in defined
    assert content_format(CONTENT_PARTS) == "openai" and content_format(BASIC) == "string"
    assert "user:[text:part one][text:part two]" in ref("content_parts")
    assert ref("globals").startswith("2 users; {")
    assert "get_weather() {}" in ref("arguments")  # arguments that are not JSON: an empty object
    assert "city=Zürich,days=2," in ref("arguments")


@pytest.mark.parametrize(
    ("body", "kwargs"),
    [
        ({"chat_template_kwargs": {"custom_flag": "on", "bos_token": "[B]"}},
         {"custom_flag": "on", "bos_token": "[B]"}),
        ({"reasoning_effort": "low"}, {"reasoning_effort": "low"}),
        ({"reasoning_effort": "none"}, {"reasoning_effort": "none"}),
        ({"chat_template_kwargs": {"enable_thinking": False}}, {"enable_thinking": False}),
        ({"thinking": {"type": "enabled"}}, {"enable_thinking": True, "thinking": True}),
    ],
)  # fmt: skip
def test_request_variables_reach_the_template_as_vllm_passes_them(
    folders: dict[str, Path], body: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    folder = folders["defined"]
    expected = reference(folder, CONVERSATION, **kwargs)
    assert _sent(_sidecar(folder), messages=CONVERSATION, **body) == expected


def test_the_thinking_switch_is_passed_only_when_the_deployment_sets_it(
    folders: dict[str, Path],
) -> None:
    folder = folders["defined"]
    assert "enable_thinking defined: False" in _sent(_sidecar(folder), messages=CONVERSATION)
    sent = _sent(_sidecar(folder, "--default-thinking", "off"), messages=CONVERSATION)
    assert sent == reference(folder, CONVERSATION, enable_thinking=False, thinking=False)
    assert "enable_thinking defined: True=False" in sent


def test_declared_but_empty_tools_are_a_list(folders: dict[str, Path]) -> None:
    folder = folders["defined"]
    sent = _sent(_sidecar(folder), messages=CONVERSATION, tools=[])
    assert "tools none: False" in sent and sent == reference(folder, CONVERSATION, [])


# -- where the template comes from ---------------------------------------------------------

NAMED = [
    {"name": "default", "template": "plain:{% for m in messages %}{{ m.content }}{% endfor %}"},
    {"name": "tool_use",
     "template": "tools:{{ tools | map(attribute='function.name') | join(',') }}"},
]  # fmt: skip


def test_named_templates_are_chosen_as_transformers_chooses(tmp_path: Path) -> None:
    folder = make_model_folder(tmp_path / "named", NAMED, in_config=True)
    sidecar = _sidecar(folder)
    messages = [{"role": "user", "content": "hi"}]
    assert _sent(sidecar, messages=messages) == reference(folder, messages) == "plain:hi"
    with_tools = _sent(sidecar, messages=messages, tools=TOOLS)
    assert with_tools == reference(folder, messages, TOOLS) == "tools:get_weather,now"
    assert "tool_use=" in sidecar.template.describe() and "default=" in sidecar.template.describe()


def test_a_config_template_string_and_special_tokens(tmp_path: Path) -> None:
    folder = make_model_folder(tmp_path / "cfg", BASIC, in_config=True)
    assert not (folder / "chat_template.jinja").exists()
    assert _sent(_sidecar(folder), messages=CONVERSATION) == reference(folder, CONVERSATION)


def test_chat_template_flag_overrides_the_folder_and_keeps_its_tokens(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    override = tmp_path / "override.jinja"
    override.write_text("{{ bos_token }}over{{ eos_token }}\n", encoding="utf-8")
    sidecar = _sidecar(folders["basic"], "--chat-template", str(override))
    assert _sent(sidecar, messages=CONVERSATION) == "<s>over</s>"
    tokenizer_flag = _sidecar(Path("served-name"), "--tokenizer", str(folders["basic"]))
    assert _sent(tokenizer_flag, messages=CONVERSATION) == reference(folders["basic"], CONVERSATION)
    assert tokenizer_flag.config.model == "served-name"


def test_startup_names_the_template_and_its_sha256(
    folders: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import hashlib

    argv = [
        "vllm",
        "--engine-url",
        "http://127.0.0.1:9",
        "--model",
        str(folders["basic"]),
        "--check-config",
    ]
    assert main(argv, environ={}) == 0
    out = capsys.readouterr().out
    digest = hashlib.sha256(BASIC.encode()).hexdigest()
    assert f"{folders['basic'] / 'chat_template.jinja'} sha256={digest}" in out


# -- continuing the last message (a prefill) ----------------------------------------------

PREFILL = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Zürich?"},
    {"role": "assistant", "content": "It is "},  # the model goes on from here
]
TRIMMING = (  # trims the text it writes: the continued message's trailing blank goes too
    "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


@pytest.mark.parametrize("name", ["basic", "content_parts", "trimming"])
def test_continue_final_message_leaves_the_last_message_open_as_transformers_does(
    tmp_path: Path, name: str
) -> None:
    source = TRIMMING if name == "trimming" else CASES[name]
    folder = make_model_folder(tmp_path / name, source)
    fmt = content_format(source)
    expected = reference(
        folder, PREFILL, content_format=fmt, add_generation_prompt=False,
        continue_final_message=True,
    )  # fmt: skip
    sent = _sent(
        _sidecar(folder), messages=PREFILL, add_generation_prompt=False,
        continue_final_message=True,
    )  # fmt: skip
    assert sent == expected
    assert sent.rstrip().endswith("It is")  # open: no end of turn, no new header
    assert sent != _sent(_sidecar(folder), messages=PREFILL)


def test_add_generation_prompt_false_renders_without_the_header(folders: dict[str, Path]) -> None:
    folder = folders["basic"]
    expected = reference(folder, CONVERSATION, add_generation_prompt=False)
    sent = _sent(_sidecar(folder), messages=CONVERSATION, add_generation_prompt=False)
    assert sent == expected
    assert not sent.endswith("<|assistant|>\n")
    assert _sent(_sidecar(folder), messages=CONVERSATION).endswith("<|assistant|>\n")


@pytest.mark.parametrize("add", [None, True])
def test_continuing_needs_the_generation_prompt_off(
    folders: dict[str, Path], add: bool | None
) -> None:
    folder = folders["basic"]
    with pytest.raises(ValueError, match="not compatible"):
        reference(folder, PREFILL, continue_final_message=True)  # transformers refuses too
    body: dict[str, Any] = {"messages": PREFILL, "continue_final_message": True}
    if add is not None:
        body["add_generation_prompt"] = add
    with pytest.raises(APIError) as info:
        _sent(_sidecar(folder), **body)
    assert info.value.status == 400 and info.value.param == "continue_final_message"
    assert "add_generation_prompt" in info.value.message


def test_a_template_that_drops_the_continued_message_is_refused_by_both(tmp_path: Path) -> None:
    source = (
        "{% for m in messages %}{% if m.role != 'assistant' %}{{ m.content }}{% endif %}"
        "{% endfor %}"
    )
    folder = make_model_folder(tmp_path / "drops", source)
    with pytest.raises(ValueError, match="does not appear"):
        reference(folder, PREFILL, add_generation_prompt=False, continue_final_message=True)
    with pytest.raises(APIError) as info:
        _sent(
            _sidecar(folder), messages=PREFILL, add_generation_prompt=False,
            continue_final_message=True,
        )  # fmt: skip
    assert info.value.status == 400 and "does not appear" in info.value.message


# -- what both sides refuse ----------------------------------------------------------------


def _both_refuse(folder: Path, messages: Sequence[Mapping[str, Any]]) -> APIError:
    with pytest.raises(Exception):  # noqa: B017 - transformers raises its own types
        reference(folder, messages)
    with pytest.raises(APIError) as info:
        _sent(_sidecar(folder), messages=list(messages))
    assert info.value.status == 400
    return info.value


def test_raise_exception_is_a_400_naming_the_templates_message(tmp_path: Path) -> None:
    source = (
        "{% if messages[0].role != 'system' %}{{ raise_exception('a system turn first') }}"
        "{% endif %}ok"
    )
    folder = make_model_folder(tmp_path / "raise", source)
    error = _both_refuse(folder, [{"role": "user", "content": "hi"}])
    assert "a system turn first" in error.message and error.param == "messages"
    assert _sent(_sidecar(folder), messages=CONVERSATION) == reference(folder, CONVERSATION) == "ok"


def test_underscore_names_on_a_namespace_are_refused_by_both(tmp_path: Path) -> None:
    folder = make_model_folder(tmp_path / "ns", "{% set ns = namespace(_hidden=1) %}{{ ns }}")
    _both_refuse(folder, [{"role": "user", "content": "hi"}])


def test_a_template_failing_on_the_sample_is_served_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (
        "{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tools here') }}"
        "{% endif %}{{ m.content }}{% endfor %}"
    )
    folder = make_model_folder(tmp_path / "notools", source)
    warning = check_template(_sidecar(folder).template)
    assert warning is not None and "no tools here" in warning
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", str(folder), "--check-config"]
    assert main(argv, environ={}) == 0
    assert "no tools here" in capsys.readouterr().err
    messages = [{"role": "user", "content": "still served"}]
    assert _sent(_sidecar(folder), messages=messages) == reference(folder, messages)


def test_a_template_that_does_not_compile_stops_startup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m.content | from_json }}{% endfor %}", "utf-8")
    with pytest.raises(TemplateError, match="does not compile"):
        ChatTemplate.from_file(bad)
    argv = ["vllm", "--engine-url", "http://127.0.0.1:9", "--model", "m", "--check-config"]
    assert main([*argv, "--chat-template", str(bad)], environ={}) == 2
    assert str(bad) in capsys.readouterr().err


# -- end to end ----------------------------------------------------------------------------


@pytest.fixture
def engine() -> Iterator[tuple[FakeEngine, str]]:
    fake = FakeEngine("vllm")
    server = serve_in_thread(fake.app)
    try:
        yield fake, server.url
    finally:
        server.stop()


def test_a_model_folder_served_end_to_end(
    engine: tuple[FakeEngine, str], folders: dict[str, Path]
) -> None:
    """The real CLI configuration, a real HTTP server and the `openai` client: the engine
    receives the reference prompt, and no BOS is added twice."""
    import openai

    fake, url = engine
    folder = folders["basic"]
    args = _parser("vllm").parse_args(["--engine-url", url, "--model", str(folder)])
    config, adapter, template = configure("vllm", args, {})
    sidecar = serve_in_thread(build_app(config, adapter, template))
    try:
        client = openai.OpenAI(
            base_url=f"{sidecar.url}/v1", api_key="none", http_client=httpx.Client(timeout=20)
        )
        client.chat.completions.create(
            model=str(folder),
            messages=CONVERSATION,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
        )
    finally:
        sidecar.stop()
    sent = fake.requests[-1]
    assert sent["prompt"] == reference(folder, CONVERSATION, TOOLS)
    assert sent["prompt"].startswith("<s>") and sent.get("add_special_tokens") is False
