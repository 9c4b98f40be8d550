"""The built-in templates write each family's official prompt format.

For every family, the same conversations (system prompt, tools declared, a tool round trip,
multi-turn with reasoning, parallel calls, thinking on and off, non-ASCII text) are rendered by
the sidecar's renderer with the family's built-in template and compared byte for byte with the
prompt the family's official format gives, written out by hand below from its facts (turn
markers, tool declaration, tool results, thinking defaults, BOS; docs/sidecar.md, "Prompt
formats").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from sidecar.cli import _parser, configure
from sidecar.errors import APIError
from sidecar.prompt import ChatTemplate


@dataclass(frozen=True)
class Conversation:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    thinking: bool | None = None  # the sidecar's switch; None: the template's own default
    kwargs: dict[str, Any] = field(default_factory=dict)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Local time",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "utc": {"type": "boolean"}},
        },
    },
}


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATIONS: dict[str, Conversation] = {
    "system": Conversation(
        [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hello"}]
    ),
    "tools_declared": Conversation(
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris?"},
        ],
        tools=[WEATHER, TIME],
    ),
    "tool_round_trip": Conversation(
        [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [_call("call_1", "get_weather", '{"city": "Paris"}')],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
        ],
        tools=[WEATHER],
    ),
    "multi_turn_reasoning": Conversation(
        [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "reasoning_content": "Add them.", "content": "4"},
            {"role": "user", "content": "And 3+3?"},
            {"role": "assistant", "reasoning_content": "Add again.", "content": "6"},
            {"role": "user", "content": "Thanks"},
        ]
    ),
    "parallel_calls": Conversation(
        [
            {"role": "user", "content": "Weather and time in Paris?"},
            {
                "role": "assistant",
                "reasoning_content": "Two tools.",
                "content": "Checking.",
                "tool_calls": [
                    _call("call_1", "get_weather", '{"city": "Paris"}'),
                    _call("call_2", "get_time", '{"city": "Paris", "utc": true}'),
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "09:00"},
        ],
        tools=[WEATHER, TIME],
    ),
    "thinking_on": Conversation([{"role": "user", "content": "Hi"}], thinking=True),
    "thinking_off": Conversation([{"role": "user", "content": "Hi"}], thinking=False),
    "non_ascii": Conversation(
        [
            {"role": "system", "content": "Réponds en français."},
            {"role": "user", "content": "Grüße, 你好 — ¿qué tal? 🌤"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [_call("call_1", "get_weather", '{"city": "Zürich"}')],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "Température : 18 °C"},
        ],
        tools=[WEATHER],
    ),
}

# -- Qwen3 (hermes): ChatML; tools as JSON lines; calls as JSON in <tool_call> ------------------

Q3_TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
Q3_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
)
Q3_WEATHER = (
    '\n{"type": "function", "function": {"name": "get_weather", "description": '
    '"Weather of a city", "parameters": {"type": "object", "properties": {"city": '
    '{"type": "string", "description": "City name"}}, "required": ["city"]}}}'
)
Q3_TIME = (
    '\n{"type": "function", "function": {"name": "get_time", "description": "Local time", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}, '
    '"utc": {"type": "boolean"}}}}}'
)

QWEN3 = {
    "system": "<|im_start|>system\nYou are terse.<|im_end|>\n"
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "tools_declared": "<|im_start|>system\nYou are terse.\n\n"
    + Q3_TOOLS_HEAD
    + Q3_WEATHER
    + Q3_TIME
    + Q3_TOOLS_TAIL
    + "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n",
    # tool results go back as a user turn
    "tool_round_trip": "<|im_start|>system\n"
    + Q3_TOOLS_HEAD
    + Q3_WEATHER
    + Q3_TOOLS_TAIL
    + "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
    '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": '
    '{"city": "Paris"}}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\n<tool_response>\n18C, sunny\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n",
    # reasoning of turns before the last query is dropped
    "multi_turn_reasoning": "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
    "<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n6<|im_end|>\n"
    "<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n",
    "parallel_calls": "<|im_start|>system\n"
    + Q3_TOOLS_HEAD
    + Q3_WEATHER
    + Q3_TIME
    + Q3_TOOLS_TAIL
    + "<|im_start|>user\nWeather and time in Paris?<|im_end|>\n"
    "<|im_start|>assistant\n<think>\nTwo tools.\n</think>\n\nChecking.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_time", "arguments": {"city": "Paris", "utc": true}}\n'
    "</tool_call><|im_end|>\n"
    "<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n<tool_response>\n09:00\n"
    "</tool_response><|im_end|>\n<|im_start|>assistant\n",
    "thinking_on": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "thinking_off": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    "<think>\n\n</think>\n\n",
    "non_ascii": "<|im_start|>system\nRéponds en français.\n\n"
    + Q3_TOOLS_HEAD
    + Q3_WEATHER
    + Q3_TOOLS_TAIL
    + "<|im_start|>user\nGrüße, 你好 — ¿qué tal? 🌤<|im_end|>\n"
    '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": '
    '{"city": "Zürich"}}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\n<tool_response>\nTempérature : 18 °C\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n",
}

# -- Qwen3-Coder: ChatML; tools declared as XML; calls as <function=NAME><parameter=KEY> --------

QC_DEFAULT_SYSTEM = (
    "You are Qwen, a helpful AI assistant that can interact with a computer to solve tasks."
)
QC_TOOLS_HEAD = "\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>"
QC_WEATHER = (
    "\n<function>\n<name>get_weather</name>\n<description>Weather of a city</description>"
    "\n<parameters>\n<parameter>\n<name>city</name>\n<type>string</type>"
    "\n<description>City name</description>\n</parameter>"
    '\n<required>["city"]</required>\n</parameters>\n</function>'
)
QC_TIME = (
    "\n<function>\n<name>get_time</name>\n<description>Local time</description>"
    "\n<parameters>\n<parameter>\n<name>city</name>\n<type>string</type>\n</parameter>"
    "\n<parameter>\n<name>utc</name>\n<type>boolean</type>\n</parameter>"
    "\n</parameters>\n</function>"
)
QC_TOOLS_TAIL = (
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO "
    "suffix:\n\n<tool_call>\n<function=example_function_name>\n"
    "<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\n"
    "that can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n"
    "<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner "
    "<function=...></function> block must be nested within <tool_call></tool_call> XML tags\n"
    "- Required parameters MUST be specified\n- You may provide optional reasoning for your "
    "function call in natural language BEFORE the function call, but NOT after\n"
    "- If there is no function call available, answer the question like normal with your "
    "current knowledge and do not tell the user about function calls\n</IMPORTANT><|im_end|>\n"
)

QWEN3_CODER = {
    "system": "<|im_start|>system\nYou are terse.<|im_end|>\n"
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "tools_declared": "<|im_start|>system\nYou are terse."
    + QC_TOOLS_HEAD
    + QC_WEATHER
    + QC_TIME
    + QC_TOOLS_TAIL
    + "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n",
    "tool_round_trip": "<|im_start|>system\n"
    + QC_DEFAULT_SYSTEM
    + QC_TOOLS_HEAD
    + QC_WEATHER
    + QC_TOOLS_TAIL
    + "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call><|im_end|>\n"
    "<|im_start|>user\n<tool_response>\n18C, sunny\n</tool_response>\n<|im_end|>\n"
    "<|im_start|>assistant\n",
    # no reasoning is kept
    "multi_turn_reasoning": "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n"
    "<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n6<|im_end|>\n"
    "<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n",
    # argument values as text: a boolean as Python writes it
    "parallel_calls": "<|im_start|>system\n"
    + QC_DEFAULT_SYSTEM
    + QC_TOOLS_HEAD
    + QC_WEATHER
    + QC_TIME
    + QC_TOOLS_TAIL
    + "<|im_start|>user\nWeather and time in Paris?<|im_end|>\n<|im_start|>assistant\n"
    "Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
    "</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n<parameter=city>\nParis\n"
    "</parameter>\n<parameter=utc>\nTrue\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
    "<|im_start|>user\n<tool_response>\n18C\n</tool_response>\n"
    "<tool_response>\n09:00\n</tool_response>\n<|im_end|>\n<|im_start|>assistant\n",
    "thinking_on": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "thinking_off": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "non_ascii": "<|im_start|>system\nRéponds en français."
    + QC_TOOLS_HEAD
    + QC_WEATHER
    + QC_TOOLS_TAIL
    + "<|im_start|>user\nGrüße, 你好 — ¿qué tal? 🌤<|im_end|>\n<|im_start|>assistant\n"
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nZürich\n</parameter>\n"
    "</function>\n</tool_call><|im_end|>\n"
    "<|im_start|>user\n<tool_response>\nTempérature : 18 °C\n</tool_response>\n<|im_end|>\n"
    "<|im_start|>assistant\n",
}

# -- GLM: `[gMASK]<sop>`; <|role|> turn markers; calls as <tool_call>NAME<arg_key>..<arg_value> --

WEATHER_JSON = Q3_WEATHER[1:]
TIME_JSON = Q3_TIME[1:]
GLM_TOOLS_HEAD = (
    "<|system|>\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
GLM_INSTRUCTION = (
    "</tools>\n\nFor each function call, output the function name and arguments within the "
    "following XML format:\n"
)
GLM47_TOOLS_TAIL = GLM_INSTRUCTION + (
    "<tool_call>{function-name}<arg_key>{arg-key-1}</arg_key><arg_value>{arg-value-1}"
    "</arg_value><arg_key>{arg-key-2}</arg_key><arg_value>{arg-value-2}</arg_value>..."
    "</tool_call>"
)
GLM45_TOOLS_TAIL = GLM_INSTRUCTION + (
    "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}"
    "</arg_value>\n<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n"
    "</tool_call>"
)
GLM47_W = "[gMASK]<sop>" + GLM_TOOLS_HEAD + WEATHER_JSON + "\n" + GLM47_TOOLS_TAIL
GLM47_WT = (
    "[gMASK]<sop>" + GLM_TOOLS_HEAD + WEATHER_JSON + "\n" + TIME_JSON + "\n" + GLM47_TOOLS_TAIL
)
GLM45_W = "[gMASK]<sop>" + GLM_TOOLS_HEAD + WEATHER_JSON + "\n" + GLM45_TOOLS_TAIL
GLM45_WT = (
    "[gMASK]<sop>" + GLM_TOOLS_HEAD + WEATHER_JSON + "\n" + TIME_JSON + "\n" + GLM45_TOOLS_TAIL
)

# GLM-4.7: no newlines after turn markers; history turns open with `</think>`; `<think>` prefilled
GLM47 = {
    "system": "[gMASK]<sop><|system|>You are terse.<|user|>Hello<|assistant|><think>",
    "tools_declared": GLM47_WT
    + "<|system|>You are terse.<|user|>Weather in Paris?<|assistant|><think>",
    "tool_round_trip": GLM47_W + "<|user|>Weather in Paris?<|assistant|></think>"
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    "<|observation|><tool_response>18C, sunny</tool_response><|assistant|><think>",
    "multi_turn_reasoning": "[gMASK]<sop><|user|>2+2?<|assistant|></think>4<|user|>And 3+3?"
    "<|assistant|></think>6<|user|>Thanks<|assistant|><think>",
    "parallel_calls": GLM47_WT + "<|user|>Weather and time in Paris?<|assistant|>"
    "<think>Two tools.</think>Checking.<tool_call>get_weather<arg_key>city</arg_key>"
    "<arg_value>Paris</arg_value></tool_call><tool_call>get_time<arg_key>city</arg_key>"
    "<arg_value>Paris</arg_value><arg_key>utc</arg_key><arg_value>true</arg_value></tool_call>"
    "<|observation|><tool_response>18C</tool_response><tool_response>09:00</tool_response>"
    "<|assistant|><think>",
    "thinking_on": "[gMASK]<sop><|user|>Hi<|assistant|><think>",
    "thinking_off": "[gMASK]<sop><|user|>Hi<|assistant|></think>",
    "non_ascii": GLM47_W + "<|system|>Réponds en français.<|user|>Grüße, 你好 — ¿qué tal? 🌤"
    "<|assistant|></think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Zürich"
    "</arg_value></tool_call><|observation|><tool_response>Température : 18 °C"
    "</tool_response><|assistant|><think>",
}

# GLM-4.5 / 4.6: a newline after turn markers; `<think></think>` on history turns; `/nothink`
GLM45 = {
    "system": "[gMASK]<sop><|system|>\nYou are terse.<|user|>\nHello<|assistant|>",
    "tools_declared": GLM45_WT
    + "<|system|>\nYou are terse.<|user|>\nWeather in Paris?<|assistant|>",
    "tool_round_trip": GLM45_W + "<|user|>\nWeather in Paris?<|assistant|>\n<think></think>\n"
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
    "<|observation|>\n<tool_response>\n18C, sunny\n</tool_response><|assistant|>",
    "multi_turn_reasoning": "[gMASK]<sop><|user|>\n2+2?<|assistant|>\n<think></think>\n4"
    "<|user|>\nAnd 3+3?<|assistant|>\n<think></think>\n6<|user|>\nThanks<|assistant|>",
    "parallel_calls": GLM45_WT + "<|user|>\nWeather and time in Paris?<|assistant|>\n"
    "<think>Two tools.</think>\nChecking.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
    "<arg_value>Paris</arg_value>\n</tool_call>\n<tool_call>get_time\n<arg_key>city</arg_key>\n"
    "<arg_value>Paris</arg_value>\n<arg_key>utc</arg_key>\n<arg_value>true</arg_value>\n"
    "</tool_call><|observation|>\n<tool_response>\n18C\n</tool_response>\n<tool_response>\n"
    "09:00\n</tool_response><|assistant|>",
    "thinking_on": "[gMASK]<sop><|user|>\nHi<|assistant|>",
    "thinking_off": "[gMASK]<sop><|user|>\nHi/nothink<|assistant|>\n<think></think>",
    "non_ascii": GLM45_W + "<|system|>\nRéponds en français.<|user|>\nGrüße, 你好 — ¿qué tal? 🌤"
    "<|assistant|>\n<think></think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
    "<arg_value>Zürich</arg_value>\n</tool_call><|observation|>\n<tool_response>\n"
    "Température : 18 °C\n</tool_response><|assistant|>",
}

# -- Gemma 4: BOS; <|turn>ROLE ... <turn|>; its own declaration syntax; results in the model turn --

GQ = '<|"|>'  # Gemma's string quote token
G4_W = (
    f"<|tool>declaration:get_weather{{description:{GQ}Weather of a city{GQ},parameters:{{"
    f"properties:{{city:{{description:{GQ}City name{GQ},type:{GQ}STRING{GQ}}}}},"
    f"required:[{GQ}city{GQ}],type:{GQ}OBJECT{GQ}}}}}<tool|>"
)
G4_T = (
    f"<|tool>declaration:get_time{{description:{GQ}Local time{GQ},parameters:{{"
    f"properties:{{city:{{type:{GQ}STRING{GQ}}},utc:{{type:{GQ}BOOLEAN{GQ}}}}},"
    f"type:{GQ}OBJECT{GQ}}}}}<tool|>"
)
G4_OFF = "<|turn>model\n<|channel>thought\n<channel|>"  # thinking off: an empty thought channel

GEMMA4 = {
    "system": "<bos><|turn>system\nYou are terse.<turn|>\n<|turn>user\nHello<turn|>\n" + G4_OFF,
    "tools_declared": "<bos><|turn>system\nYou are terse."
    + G4_W
    + G4_T
    + "<turn|>\n<|turn>user\nWeather in Paris?<turn|>\n"
    + G4_OFF,
    # the result follows the call in the model turn, and no generation prompt follows it
    "tool_round_trip": "<bos><|turn>system\n"
    + G4_W
    + "<turn|>\n<|turn>user\nWeather in Paris?<turn|>\n<|turn>model\n"
    f"<|tool_call>call:get_weather{{city:{GQ}Paris{GQ}}}<tool_call|>"
    f"<|tool_response>response:get_weather{{value:{GQ}18C, sunny{GQ}}}<tool_response|>",
    "multi_turn_reasoning": "<bos><|turn>user\n2+2?<turn|>\n<|turn>model\n4<turn|>\n"
    "<|turn>user\nAnd 3+3?<turn|>\n<|turn>model\n6<turn|>\n<|turn>user\nThanks<turn|>\n" + G4_OFF,
    # reasoning of a calling turn after the last user turn is kept; text after the results
    "parallel_calls": "<bos><|turn>system\n"
    + G4_W
    + G4_T
    + "<turn|>\n<|turn>user\nWeather and time in Paris?<turn|>\n<|turn>model\n"
    "<|channel>thought\nTwo tools.\n<channel|>"
    f"<|tool_call>call:get_weather{{city:{GQ}Paris{GQ}}}<tool_call|>"
    f"<|tool_call>call:get_time{{city:{GQ}Paris{GQ},utc:true}}<tool_call|>"
    f"<|tool_response>response:get_weather{{value:{GQ}18C{GQ}}}<tool_response|>"
    f"<|tool_response>response:get_time{{value:{GQ}09:00{GQ}}}<tool_response|>"
    "Checking.<turn|>\n",
    "thinking_on": "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n",
    "thinking_off": "<bos><|turn>user\nHi<turn|>\n" + G4_OFF,
    "non_ascii": "<bos><|turn>system\nRéponds en français."
    + G4_W
    + "<turn|>\n<|turn>user\nGrüße, 你好 — ¿qué tal? 🌤<turn|>\n<|turn>model\n"
    f"<|tool_call>call:get_weather{{city:{GQ}Zürich{GQ}}}<tool_call|>"
    f"<|tool_response>response:get_weather{{value:{GQ}Température : 18 °C{GQ}}}"
    "<tool_response|>",
}

# -- Kimi K2 (K2 Thinking's layout): <|im_user|>user<|im_middle|>...<|im_end|>, no newlines ----

K2_SYSTEM = (
    "<|im_system|>system<|im_middle|>You are Kimi, an AI assistant created by Moonshot AI."
    "<|im_end|>"
)
K2_W = "<|im_system|>tool_declare<|im_middle|>[" + WEATHER_JSON + "]<|im_end|>"
K2_WT = "<|im_system|>tool_declare<|im_middle|>[" + WEATHER_JSON + ", " + TIME_JSON + "]<|im_end|>"
K2_GEN = "<|im_assistant|>assistant<|im_middle|>"


def k2_user(text: str) -> str:
    return f"<|im_user|>user<|im_middle|>{text}<|im_end|>"


def k2_result(call_id: str, text: str) -> str:
    return f"<|im_system|>tool<|im_middle|>## Return of {call_id}\n{text}<|im_end|>"


def k2_calls(*calls: tuple[str, str]) -> str:
    inner = "".join(
        f"<|tool_call_begin|>{i}<|tool_call_argument_begin|>{a}<|tool_call_end|>" for i, a in calls
    )
    return f"<|tool_calls_section_begin|>{inner}<|tool_calls_section_end|>"


KIMI_K2 = {
    "system": "<|im_system|>system<|im_middle|>You are terse.<|im_end|>"
    + k2_user("Hello")
    + K2_GEN,
    "tools_declared": K2_WT
    + "<|im_system|>system<|im_middle|>You are terse.<|im_end|>"
    + k2_user("Weather in Paris?")
    + K2_GEN,
    "tool_round_trip": K2_W
    + K2_SYSTEM
    + k2_user("Weather in Paris?")
    + K2_GEN
    + "<think></think>"
    + k2_calls(("call_1", '{"city": "Paris"}'))
    + "<|im_end|>"
    + k2_result("call_1", "18C, sunny")
    + K2_GEN,
    # turns up to the last answer without calls show an empty block
    "multi_turn_reasoning": K2_SYSTEM
    + k2_user("2+2?")
    + K2_GEN
    + "<think></think>4<|im_end|>"
    + k2_user("And 3+3?")
    + K2_GEN
    + "<think></think>6<|im_end|>"
    + k2_user("Thanks")
    + K2_GEN,
    "parallel_calls": K2_WT
    + K2_SYSTEM
    + k2_user("Weather and time in Paris?")
    + K2_GEN
    + "<think>Two tools.</think>Checking."
    + k2_calls(("call_1", '{"city": "Paris"}'), ("call_2", '{"city": "Paris", "utc": true}'))
    + "<|im_end|>"
    + k2_result("call_1", "18C")
    + k2_result("call_2", "09:00")
    + K2_GEN,
    "thinking_on": K2_SYSTEM + k2_user("Hi") + K2_GEN,
    # K2 Thinking's format has no thinking switch: nothing is prefilled either way
    "thinking_off": K2_SYSTEM + k2_user("Hi") + K2_GEN,
    "non_ascii": K2_W
    + "<|im_system|>system<|im_middle|>Réponds en français.<|im_end|>"
    + k2_user("Grüße, 你好 — ¿qué tal? 🌤")
    + K2_GEN
    + "<think></think>"
    + k2_calls(("call_1", '{"city": "Zürich"}'))
    + "<|im_end|>"
    + k2_result("call_1", "Température : 18 °C")
    + K2_GEN,
}


# -- Kimi K3: XTML elements <|open|>NAME<|sep|>…<|close|>NAME<|sep|>, messages end <|end_of_msg|> --
# Written from the family encoder's public goldens: its tokenizer test's thinking-off prompt
# (thinking_off, byte for byte), a port's goldens of the thinking-effort message and of a history
# turn with an empty think channel (system, multi_turn_reasoning), and the encoder's own element
# rules for the tool declaration, typed arguments and tool results (the tool shapes).

K3_EOM = "<|close|>message<|sep|><|end_of_msg|>"
K3_EFFORT = (
    '<|open|>message role="system" type="thinking-effort"<|sep|>`thinking_effort` guides on how '
    "much to think in your thinking channel (not including the response channel), supported "
    "values include `low`, `medium`, `high`, and `max`.\nNow the system is invoked with "
    "`thinking_effort=max`." + K3_EOM
)
# the declaration: the tool list as compact JSON, keys sorted at every level
K3_W_SORTED = (
    '{"function":{"description":"Weather of a city","name":"get_weather","parameters":'
    '{"properties":{"city":{"description":"City name","type":"string"}},"required":["city"],'
    '"type":"object"}},"type":"function"}'
)
K3_T_SORTED = (
    '{"function":{"description":"Local time","name":"get_time","parameters":{"properties":'
    '{"city":{"type":"string"},"utc":{"type":"boolean"}},"type":"object"}},"type":"function"}'
)
K3_THINK_GEN = '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'


def k3_declare(*tools: str) -> str:
    return (
        '<|open|>message role="system" type="tool-declare"<|sep|># Tools\nHere are the '
        "available tools, described in JSONSchema.\n\n```json\n["
        + ",".join(tools)
        + "]\n```"
        + K3_EOM
    )


def k3_msg(role: str, text: str) -> str:
    return f'<|open|>message role="{role}"<|sep|>{text}' + K3_EOM


def k3_assistant(reasoning: str, text: str, calls: str = "") -> str:
    return (
        '<|open|>message role="assistant"<|sep|>'
        f"<|open|>think<|sep|>{reasoning}<|close|>think<|sep|>"
        f"<|open|>response<|sep|>{text}<|close|>response<|sep|>" + calls + K3_EOM
    )


def k3_calls(*calls: tuple[str, list[tuple[str, str, str]]]) -> str:
    inner = "".join(
        f'<|open|>call tool="{name}" index="{i}"<|sep|>'
        + "".join(
            f'<|open|>argument key="{k}" type="{t}"<|sep|>{v}<|close|>argument<|sep|>'
            for k, t, v in args
        )
        + "<|close|>call<|sep|>"
        for i, (name, args) in enumerate(calls, start=1)
    )
    return f"<|open|>tools<|sep|>{inner}<|close|>tools<|sep|>"


def k3_result(tool: str, index: int, text: str) -> str:
    return f'<|open|>message role="tool" tool="{tool}" index="{index}"<|sep|>{text}' + K3_EOM


KIMI_K3 = {
    "system": K3_EFFORT
    + k3_msg("system", "You are terse.")
    + k3_msg("user", "Hello")
    + K3_THINK_GEN,
    # the declaration comes first, before the effort message
    "tools_declared": k3_declare(K3_W_SORTED, K3_T_SORTED)
    + K3_EFFORT
    + k3_msg("system", "You are terse.")
    + k3_msg("user", "Weather in Paris?")
    + K3_THINK_GEN,
    # thinking on: every assistant message has its think channel, empty without reasoning
    "tool_round_trip": k3_declare(K3_W_SORTED)
    + K3_EFFORT
    + k3_msg("user", "Weather in Paris?")
    + k3_assistant("", "", k3_calls(("get_weather", [("city", "string", "Paris")])))
    + k3_result("get_weather", 1, "18C, sunny")
    + K3_THINK_GEN,
    # reasoning is kept on every turn
    "multi_turn_reasoning": K3_EFFORT
    + k3_msg("user", "2+2?")
    + k3_assistant("Add them.", "4")
    + k3_msg("user", "And 3+3?")
    + k3_assistant("Add again.", "6")
    + k3_msg("user", "Thanks")
    + K3_THINK_GEN,
    # a string argument as is, others as JSON with their type; results numbered per turn
    "parallel_calls": k3_declare(K3_W_SORTED, K3_T_SORTED)
    + K3_EFFORT
    + k3_msg("user", "Weather and time in Paris?")
    + k3_assistant(
        "Two tools.",
        "Checking.",
        k3_calls(
            ("get_weather", [("city", "string", "Paris")]),
            ("get_time", [("city", "string", "Paris"), ("utc", "boolean", "true")]),
        ),
    )
    + k3_result("get_weather", 1, "18C")
    + k3_result("get_time", 2, "09:00")
    + K3_THINK_GEN,
    "thinking_on": K3_EFFORT + k3_msg("user", "Hi") + K3_THINK_GEN,
    # thinking off: no effort message, no think channels, the response channel opened
    "thinking_off": k3_msg("user", "Hi")
    + '<|open|>message role="assistant"<|sep|><|open|>response<|sep|>',
    "non_ascii": k3_declare(K3_W_SORTED)
    + K3_EFFORT
    + k3_msg("system", "Réponds en français.")
    + k3_msg("user", "Grüße, 你好 — ¿qué tal? 🌤")
    + k3_assistant("", "", k3_calls(("get_weather", [("city", "string", "Zürich")])))
    + k3_result("get_weather", 1, "Température : 18 °C")
    + K3_THINK_GEN,
}

# -- Muse: BOS; <|start|>ROLE<|message|>…<|eot|>; reasoning to self, calls to each tool (ATEM) --
# Written from public goldens of the family's own template: a renderer's exact default system
# prompt and generation prompt (system, thinking_on, thinking_off), a golden rendering with tools
# declared and a tool result (tools_declared, tool_round_trip), and exact ATEM call, reasoning
# and parallel-call renderings (parallel_calls, multi_turn_reasoning).

MUSE_BOS = "<|begin_of_text|>"
MUSE_GEN = "<|start|>assistant"
MUSE_TOOLS_HEAD = (
    "\n\nIn this environment you have access to a set of tools you can use to answer the user's "
    'question.\n\nYou can invoke a function by writing a "<atem:function_calls>" block like the '
    'following:\n<atem:function_calls>\n<atem:invoke name="$FUNCTION_NAME">\n'
    '<atem:parameter name="$PARAMETER_NAME">$PARAMETER_VALUE</atem:parameter>\n...\n'
    "</atem:invoke>\n</atem:function_calls>\n\nString and scalar parameters should be specified "
    "as is, while lists and objects should use JSON format. Note that spaces for string values "
    "are not stripped. The output is not expected to be valid XML and is parsed with regular "
    "expressions.\nHere are the functions available in JSONSchema format:\n// Tool metadata\n"
)
MUSE_TOOLS_TAIL = (
    "\n\nHere's an example of how to call a function in the tool set:\n(If the tool namespace is "
    "not specified, invoke the function directly as `example_function_name` rather than "
    "`example_tool_name.example_function_name`)\n\nto=example_tool_name.example_function_name"
    '\n\n<atem:function_calls>\n<atem:invoke name="example_tool_name.example_function_name">\n'
    '<atem:parameter name="example_parameter_1">value_1</atem:parameter>\n'
    '<atem:parameter name="example_parameter_2">This is the value for the second parameter\n'
    'that can span\n"multiple" lines\n</atem:parameter>\n</atem:invoke>\n</atem:function_calls>'
)
MUSE_W_FN = (
    '\n{"name": "get_weather", "description": "Weather of a city", "parameters": {"type": '
    '"object", "properties": {"city": {"type": "string", "description": "City name"}}, '
    '"required": ["city"]}}'
)
MUSE_T_FN = (
    '\n{"name": "get_time", "description": "Local time", "parameters": {"type": "object", '
    '"properties": {"city": {"type": "string"}, "utc": {"type": "boolean"}}}}'
)
# a namespace per tool: the name up to its first dot (here the whole name)
MUSE_W = (
    MUSE_TOOLS_HEAD
    + '{"name": "get_weather", "description": ""}\n// Function schemas'
    + MUSE_W_FN
    + MUSE_TOOLS_TAIL
)
MUSE_WT = (
    MUSE_TOOLS_HEAD
    + '{"name": "get_weather", "description": ""}\n{"name": "get_time", "description": ""}\n'
    "// Function schemas" + MUSE_W_FN + MUSE_T_FN + MUSE_TOOLS_TAIL
)


def muse_default() -> str:
    # the template's own system prompt, dated by `strftime_now` (the renderer's clock)
    today = datetime.now().strftime("%Y-%m-%d")
    return f"You are a helpful AI assistant.\nKnowledge cutoff: 2026-01-04.\nCurrent date: {today}."


def muse_system(body: str, tools: str = "", spaces: tuple[str, ...] = ()) -> str:
    recipients = ", ".join(['"self"', *(f'"{s}.*"' for s in spaces), '"user"'])
    return (
        f"<|start|>system<|message|>{body}\n\nReasoning strength: high.{tools}"
        f"\n\n# Valid recipients: {recipients}.<|eot|>"
    )


def muse_user(text: str) -> str:
    return f"<|start|>user<|message|>{text}<|eot|>"


def muse_call(name: str, args: list[tuple[str, str]], end: str) -> str:
    params = "".join(f'<atem:parameter name="{k}">{v}</atem:parameter>\n' for k, v in args)
    return (
        f"<|start|>assistant to={name}<|message|><atem:function_calls>\n"
        f'<atem:invoke name="{name}">\n{params}</atem:invoke>\n</atem:function_calls>{end}'
    )


def muse_result(name: str, text: str) -> str:
    return (
        f'<|start|>tool {name}<|message|><tool_output name="{name}">\n{text}\n</tool_output><|eot|>'
    )


def muse() -> dict[str, str]:
    default = muse_default()
    plain = MUSE_BOS + muse_system(default) + muse_user("Hi") + MUSE_GEN
    return {
        "system": MUSE_BOS + muse_system("You are terse.") + muse_user("Hello") + MUSE_GEN,
        "tools_declared": MUSE_BOS
        + muse_system("You are terse.", MUSE_WT, ("get_weather", "get_time"))
        + muse_user("Weather in Paris?")
        + MUSE_GEN,
        # the result's tool is named from the call with its id
        "tool_round_trip": MUSE_BOS
        + muse_system(default, MUSE_W, ("get_weather",))
        + muse_user("Weather in Paris?")
        + muse_call("get_weather", [("city", "Paris")], "<|eot|>")
        + muse_result("get_weather", "18C, sunny")
        + MUSE_GEN,
        # reasoning goes to self on every turn, the answer to the user
        "multi_turn_reasoning": MUSE_BOS
        + muse_system(default)
        + muse_user("2+2?")
        + "<|start|>assistant to=self<|message|>Add them.<|eom|>"
        + "<|start|>assistant to=user<|message|>4<|eot|>"
        + muse_user("And 3+3?")
        + "<|start|>assistant to=self<|message|>Add again.<|eom|>"
        + "<|start|>assistant to=user<|message|>6<|eot|>"
        + muse_user("Thanks")
        + MUSE_GEN,
        # one message per call, <|eom|> between them; a calling turn's text is not written
        "parallel_calls": MUSE_BOS
        + muse_system(default, MUSE_WT, ("get_weather", "get_time"))
        + muse_user("Weather and time in Paris?")
        + "<|start|>assistant to=self<|message|>Two tools.<|eom|>"
        + muse_call("get_weather", [("city", "Paris")], "<|eom|>")
        + muse_call("get_time", [("city", "Paris"), ("utc", "true")], "<|eot|>")
        + muse_result("get_weather", "18C")
        + muse_result("get_time", "09:00")
        + MUSE_GEN,
        # no thinking switch: the model opens its reasoning message itself
        "thinking_on": plain,
        "thinking_off": plain,
        "non_ascii": MUSE_BOS
        + muse_system("Réponds en français.", MUSE_W, ("get_weather",))
        + muse_user("Grüße, 你好 — ¿qué tal? 🌤")
        + muse_call("get_weather", [("city", "Zürich")], "<|eot|>")
        + muse_result("get_weather", "Température : 18 °C")
        + MUSE_GEN,
    }


# -- DeepSeek V4 / V4.1: BOS; <｜User｜>, <｜Assistant｜>; tools as JSON in the system prompt --

DS_BOS, DS_EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
DS_USER, DS_ASSISTANT = "<｜User｜>", "<｜Assistant｜>"
# V4's effort line for the default effort (high), before the first message when thinking
DS4_EFFORT = (
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\nYou MUST be very thorough "
    "in your thinking and comprehensively decompose the problem to resolve the root cause, "
    "rigorously stress-testing your logic against all potential paths, edge cases, and "
    "adversarial scenarios.\nExplicitly write out your entire deliberation process, documenting "
    "every intermediate step, considered alternative, and rejected hypothesis to ensure "
    "absolutely no assumption is left unchecked.\n\n"
)
# V4.1's: a system marker and a number (high is 75)
DS41_EFFORT = (
    "<｜System｜>Reasoning Effort: 75 (range 1-100, the higher the value, the more thorough "
    "the reasoning)\n\n"
)
W_FN = '{"name": "get_weather", "description": "Weather of a city", "parameters": ' + (
    WEATHER_JSON.split('"parameters": ', 1)[1][:-2] + "}"
)
T_FN = '{"name": "get_time", "description": "Local time", "parameters": ' + (
    TIME_JSON.split('"parameters": ', 1)[1][:-2] + "}"
)


def ds_tools(token: str, block: str, *schemas: str) -> str:
    """The tools section after the system prompt: usage in DSML, then each function as JSON."""
    t = f"<{token}"
    return (
        "\n\n## Tools\n\nYou have access to a set of tools to help answer the user's question. "
        f'You can invoke tools by writing a "{t}{block}>" block like the following:\n\n'
        f'{t}{block}>\n{t}invoke name="$TOOL_NAME">\n{t}parameter name="$PARAMETER_NAME" '
        f'string="true|false">$PARAMETER_VALUE</{token}parameter>\n...\n</{token}invoke>\n'
        f'{t}invoke name="$TOOL_NAME2">\n...\n</{token}invoke>\n</{token}{block}>\n\n'
        'String parameters should be specified as is and set `string="true"`. For all other '
        "types (numbers, booleans, arrays, objects), pass the value in JSON format and set "
        '`string="false"`.\n\nIf thinking_mode is enabled (triggered by <think>), you MUST '
        "output your complete reasoning inside <think>...</think> BEFORE any tool calls or final "
        "response.\n\nOtherwise, output directly after </think> with tool calls or final "
        "response.\n\n### Available Tool Schemas\n\n"
        + "\n".join(schemas)
        + "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to "
        "invoke tool calls.\n"
    )


def ds_calls(token: str, block: str, *calls: tuple[str, list[tuple[str, str, str]]]) -> str:
    """A DSML block after the answer text: one invoke per call, one parameter per argument."""
    invokes = "\n".join(
        f'<{token}invoke name="{name}">\n'
        + "\n".join(
            f'<{token}parameter name="{k}" string="{s}">{v}</{token}parameter>' for k, s, v in args
        )
        + f"\n</{token}invoke>"
        for name, args in calls
    )
    return f"\n\n<{token}{block}>\n{invokes}\n</{token}{block}>"


def deepseek(token: str, block: str, effort: str) -> dict[str, str]:
    tools_w = ds_tools(token, block, W_FN)
    tools_wt = ds_tools(token, block, W_FN, T_FN)
    paris = ("get_weather", [("city", "true", "Paris")])
    return {
        "system": DS_BOS + effort + "You are terse." + DS_USER + "Hello" + DS_ASSISTANT + "<think>",
        "tools_declared": DS_BOS
        + effort
        + "You are terse."
        + tools_wt
        + DS_USER
        + "Weather in Paris?"
        + DS_ASSISTANT
        + "<think>",
        # with tools declared no reasoning is dropped: the history turn shows an empty block
        "tool_round_trip": DS_BOS
        + effort
        + tools_w
        + DS_USER
        + "Weather in Paris?"
        + DS_ASSISTANT
        + "<think></think>"
        + ds_calls(token, block, paris)
        + DS_EOS
        + DS_USER
        + "<tool_result>18C, sunny</tool_result>"
        + DS_ASSISTANT
        + "<think>",
        # without tools, turns before the last user turn lose their reasoning and open with </think>
        "multi_turn_reasoning": DS_BOS
        + effort
        + DS_USER
        + "2+2?"
        + DS_ASSISTANT
        + "</think>4"
        + DS_EOS
        + DS_USER
        + "And 3+3?"
        + DS_ASSISTANT
        + "</think>6"
        + DS_EOS
        + DS_USER
        + "Thanks"
        + DS_ASSISTANT
        + "<think>",
        # the results are one user turn, blank lines between them
        "parallel_calls": DS_BOS
        + effort
        + tools_wt
        + DS_USER
        + "Weather and time in Paris?"
        + DS_ASSISTANT
        + "<think>Two tools.</think>Checking."
        + ds_calls(
            token, block, paris, ("get_time", [("city", "true", "Paris"), ("utc", "false", "true")])
        )
        + DS_EOS
        + DS_USER
        + "<tool_result>18C</tool_result>\n\n<tool_result>09:00</tool_result>"
        + DS_ASSISTANT
        + "<think>",
        "thinking_on": DS_BOS + effort + DS_USER + "Hi" + DS_ASSISTANT + "<think>",
        # thinking off: no effort line, `</think>` prefilled
        "thinking_off": DS_BOS + DS_USER + "Hi" + DS_ASSISTANT + "</think>",
        "non_ascii": DS_BOS
        + effort
        + "Réponds en français."
        + tools_w
        + DS_USER
        + "Grüße, 你好 — ¿qué tal? 🌤"
        + DS_ASSISTANT
        + "<think></think>"
        + ds_calls(token, block, ("get_weather", [("city", "true", "Zürich")]))
        + DS_EOS
        + DS_USER
        + "<tool_result>Température : 18 °C</tool_result>"
        + DS_ASSISTANT
        + "<think>",
    }


DEEPSEEK_V4 = deepseek("｜DSML｜", "tool_calls", DS4_EFFORT)
# V4.1: the DSML token has a space after it, the block is ` calls`; a leading system prompt
# follows the system marker
DEEPSEEK_V41 = deepseek("｜DSML｜ ", "calls", DS41_EFFORT)


@dataclass(frozen=True)
class Format:
    family: str
    tool_parser: str
    expected: dict[str, str]
    special_tokens: dict[str, str] = field(default_factory=dict)


FORMATS: dict[str, Format] = {
    "qwen3": Format("qwen3", "hermes", QWEN3),
    "qwen3_coder": Format("qwen3", "qwen3_coder", QWEN3_CODER),
    "glm47": Format("glm", "glm47", GLM47),
    "glm45": Format("glm", "glm45", GLM45),
    "kimi_k2": Format("kimi_k2", "kimi_k2", KIMI_K2),
    "gemma4": Format("gemma4", "gemma4", GEMMA4, {"bos_token": "<bos>"}),
    "deepseek_v4": Format("deepseek_v4", "deepseek_v4", DEEPSEEK_V4),
    "deepseek_v41": Format("deepseek_v41", "deepseek_v41", DEEPSEEK_V41),
    "kimi_k3": Format("kimi_k3", "kimi_k3", KIMI_K3),
    "muse": Format("muse", "muse", muse(), {"bos_token": MUSE_BOS}),
}


def render(fmt: Format, name: str) -> str:
    conv = CONVERSATIONS[name]
    template = ChatTemplate.builtin(fmt.family, fmt.tool_parser, fmt.special_tokens)
    return template.render(
        [dict(m) for m in conv.messages],
        conv.tools,
        thinking=conv.thinking,
        template_kwargs=conv.kwargs,
    )


CASES = [(f, n) for f, fmt in FORMATS.items() for n in fmt.expected]


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f}-{n}" for f, n in CASES])
def test_builtin_writes_the_official_format(family: str, name: str) -> None:
    fmt = FORMATS[family]
    assert render(fmt, name) == fmt.expected[name]


def test_every_shape_is_compared_for_every_family() -> None:
    for key, fmt in FORMATS.items():
        assert set(fmt.expected) == set(CONVERSATIONS), key


@pytest.mark.parametrize(
    ("flag", "served"),
    [("glm45", "glm45.jinja"), ("GLM45", "glm45.jinja"), ("glm47", "glm.jinja")],
)
def test_the_tool_parser_as_named_picks_its_generations_template(flag: str, served: str) -> None:
    # `glm45` and `glm47` share one grammar; the name given says which GLM generation is served
    args = _parser("vllm").parse_args(
        ["--engine-url", "http://127.0.0.1:9", "--model", "m", "--tool-call-parser", flag]
    )
    _, _, template = configure("vllm", args, {})
    assert template.name == f"built-in {served}"


def test_gemma4_writes_its_bos_without_a_model_folder() -> None:
    # the engine adds no special tokens: the prompt carries Gemma's BOS itself
    fmt = Format("gemma4", "gemma4", GEMMA4)
    assert render(fmt, "thinking_off") == GEMMA4["thinking_off"]
    folder = Format("gemma4", "gemma4", GEMMA4, {"bos_token": "<B>"})
    assert render(folder, "thinking_off") == "<B>" + GEMMA4["thinking_off"][len("<bos>") :]


def k3(name: str, **kwargs: Any) -> str:
    conv = CONVERSATIONS[name]
    template = ChatTemplate.builtin("kimi_k3", "kimi_k3")
    return template.render([dict(m) for m in conv.messages], conv.tools, **kwargs)


@pytest.mark.parametrize("effort", ["low", "high", "max"])
def test_kimi_k3_writes_the_requested_thinking_effort(effort: str) -> None:
    expected = KIMI_K3["thinking_on"].replace("thinking_effort=max`", f"thinking_effort={effort}`")
    assert k3("thinking_on", reasoning_effort=effort) == expected
    # the family's own variable wins over reasoning_effort
    kwargs = {"thinking_effort": effort}
    assert k3("thinking_on", reasoning_effort="low", template_kwargs=kwargs) == expected


def test_kimi_k3_effort_none_is_thinking_off_and_other_efforts_are_refused() -> None:
    assert k3("thinking_on", reasoning_effort="none") == KIMI_K3["thinking_off"]
    with pytest.raises(APIError) as info:
        k3("thinking_on", reasoning_effort="medium")
    assert info.value.status == 400 and "low, high, max" in info.value.message


def test_muse_reasoning_strength_and_named_tool_results() -> None:
    template = ChatTemplate.builtin("muse", "muse")
    conv = CONVERSATIONS["tool_round_trip"]
    messages = [dict(m) for m in conv.messages]
    kwargs = {"reasoning_strength": "low", "current_date": "2030-02-03"}
    low = template.render(messages, None, template_kwargs=kwargs)
    assert "\nCurrent date: 2030-02-03.\n\nReasoning strength: low.\n\n" in low
    assert "strength: high" not in low
    # a result's own name wins over its call's; a system text naming an effort keeps its own
    messages[-1] = {**messages[-1], "name": "weather.get"}
    messages.insert(0, {"role": "system", "content": "Reasoning effort: medium."})
    prompt = template.render(messages, None)
    assert '<|start|>tool weather.get<|message|><tool_output name="weather.get">\n' in prompt
    assert prompt.count("Reasoning strength") == 1 and "Reasoning strength: medium." in prompt
    assert "You are a helpful AI assistant." not in prompt


def test_kimi_k3_writes_a_run_of_results_in_the_order_of_the_calls() -> None:
    conv = CONVERSATIONS["parallel_calls"]
    messages = [dict(m) for m in conv.messages]
    messages[-2], messages[-1] = messages[-1], messages[-2]
    template = ChatTemplate.builtin("kimi_k3", "kimi_k3")
    assert template.render(messages, conv.tools) == KIMI_K3["parallel_calls"]
    # an id naming no call: the run stays as given, each result named by the call at its place
    messages[-2] = {**messages[-2], "tool_call_id": "nosuch"}
    tail = k3_result("get_weather", 1, "09:00") + k3_result("get_time", 2, "18C") + K3_THINK_GEN
    assert template.render(messages, conv.tools).endswith(tail)


def test_muse_namespaces_and_a_call_followed_by_an_answer() -> None:
    # the family template's own goldens: dotted names share a namespace, one with a description;
    # a calling turn followed by an assistant message ends its call with <|eom|>
    tools = [
        {
            "type": "function",
            "function": {"name": "gh.open", "description": "Open.", "parameters": {}},
        },
        {
            "type": "function",
            "function": {"name": "gh.close", "description": "Close.", "parameters": {}},
        },
        WEATHER,
    ]
    messages = [
        {"role": "user", "content": "Go"},
        {"role": "assistant", "content": "", "tool_calls": [_call("c1", "gh.open", "{}")]},
        {"role": "assistant", "content": "done"},
    ]
    kwargs = {"tool_namespace_descriptions": {"gh": "The GitHub API."}}
    prompt = ChatTemplate.builtin("muse", "muse").render(messages, tools, template_kwargs=kwargs)
    assert (
        '// Tool metadata\n{"name": "gh", "description": "The GitHub API."}\n'
        '{"name": "get_weather", "description": ""}\n// Function schemas\n'
        '{"name": "gh.open", "description": "Open.", "parameters": {}}\n'
        '{"name": "gh.close", "description": "Close.", "parameters": {}}' + MUSE_W_FN
    ) in prompt
    assert '# Valid recipients: "self", "gh.*", "get_weather.*", "user".<|eot|>' in prompt
    assert prompt.endswith(
        muse_call("gh.open", [], "<|eom|>")
        + "<|start|>assistant to=user<|message|>done<|eot|>"
        + MUSE_GEN
    )
