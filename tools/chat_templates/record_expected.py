#!/usr/bin/env python3
"""Records what Hugging Face transformers renders for real chat templates, as the reference the
C++ renderer (core/chat_template/) is tested against (tests/core/chat_template/
chat_template_reference_test.cc).

What it records: every template *.jinja in the shared chat-template directory (54 templates,
see its README.md) plus SmolLM2-135M-Instruct's template (tokenizer_config.json "chat_template"
of models/smollm2-135m-instruct), each rendered on the conversations defined below, with
add_generation_prompt false and true. A case whose rendering raises (a template refusing a
system role, tools, ...) is recorded as {"error": message}; the C++ renderer must then throw a
DriftError containing that message.

How it renders: through transformers' own chat-template code path, exactly as
tokenizer.apply_chat_template(tokenize=False) does: _normalize_chat_messages (drops None-valued
keys) and then render_jinja_template (transformers' jinja2 ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks, loopcontrols, its tojson, raise_exception and strftime_now), with
bos_token "<s>" and eos_token "</s>" as the only special tokens. strftime_now's clock is pinned
to 2026-07-26 12:00:00 local time, and the command runs with TZ=UTC, so the C++ side formats the
instant 2026-07-26T12:00:00Z (ChatTemplateInputs::now) in its UTC local time.

Command (from the repository root; recorded with transformers 5.24.0, jinja2 3.1.6, Python 3):
    TZ=UTC /tmp/venv/bin/python tools/chat_templates/record_expected.py [TEMPLATE_DIR]
TEMPLATE_DIR defaults to ../shared/chat_templates (relative to the repository root). Output:
tests/data/chat_templates/expected.json.
"""
import datetime as _datetime
import json
import os
import sys
import time
from pathlib import Path

import jinja2
import transformers
import transformers.utils.chat_template_utils as ctu

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "tests" / "data" / "chat_templates" / "expected.json"
SMOLLM2_CONFIG = REPO / "models" / "smollm2-135m-instruct" / "tokenizer_config.json"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
FIXED_NOW = _datetime.datetime(2026, 7, 26, 12, 0, 0)  # local time; run with TZ=UTC
FIXED_NOW_UTC = "2026-07-26T12:00:00Z"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_web",
            "description": "Search the web and return the top results.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to search for"},
                    "max_results": {"type": "integer", "description": "How many results", "default": 3},
                },
                "required": ["query"],
            },
        },
    },
]

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
CONVERSATIONS = {
    "system_user": {"messages": [SYSTEM, {"role": "user", "content": "What is the capital of France?"}]},
    "user_only": {"messages": [{"role": "user", "content": "Hello! How are you?"}]},
    "multi_turn": {
        "messages": [
            {"role": "user", "content": "Hi, can you help me with math?"},
            {"role": "assistant", "content": "Of course! What do you need?"},
            {"role": "user", "content": "What is 12 * 7?"},
        ]
    },
    "tool_calls": {
        "messages": [
            SYSTEM,
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        # 9 alphanumerics: the Mistral templates refuse other tool call ids.
                        "id": "call00001",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": '{"temperature": 22, "sky": "sunny"}'},
            {"role": "assistant", "content": "It is 22 °C and sunny in Paris."},
        ],
        "tools": TOOLS,
    },
    "tools_no_calls": {
        "messages": [SYSTEM, {"role": "user", "content": "Search the web for jinja2 templates."}],
        "tools": TOOLS,
    },
    # The OpenAI wire shape: content None next to tool_calls (transformers drops None-valued keys).
    "tool_calls_null_content": {
        "messages": [
            {"role": "user", "content": "Find recent news about Mars."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call00002",
                        "type": "function",
                        "function": {"name": "search_web", "arguments": {"query": "Mars news", "max_results": 2}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call00002", "name": "search_web", "content": "1. Rover finds water ice."},
        ],
        "tools": TOOLS,
    },
    "unicode": {
        "messages": [
            {"role": "system", "content": "Réponds en français, s'il te plaît.\nSois \"bref\"."},
            {"role": "user", "content": "Qu'est-ce que « naïveté » ? 日本語 😀\n\tTabs and\\backslashes {{ not jinja }}"},
            {"role": "assistant", "content": "C'est l'absence de \"malice\" — simple.\n\nFin."},
            {"role": "user", "content": "  Merci !  "},
        ]
    },
}


class _FixedDatetime(_datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW if tz is None else FIXED_NOW.replace(tzinfo=_datetime.timezone.utc).astimezone(tz)


def render(template, conversation, add_generation_prompt):
    # tokenizer.apply_chat_template's steps, without a tokenizer.
    messages = ctu._normalize_chat_messages(json.loads(json.dumps(conversation["messages"])))
    tools = conversation.get("tools")
    rendered, _ = ctu.render_jinja_template(
        conversations=[messages],
        tools=json.loads(json.dumps(tools)) if tools is not None else None,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        bos_token=BOS_TOKEN,
        eos_token=EOS_TOKEN,
    )
    return rendered[0]


def templates(directory):
    out = {}
    for path in sorted(directory.glob("*.jinja")):
        out[path.stem] = path.read_text(encoding="utf-8")
    config = json.loads(SMOLLM2_CONFIG.read_text(encoding="utf-8"))
    out[SMOLLM2_NAME] = config["chat_template"]
    return out


def main():
    if os.environ.get("TZ") != "UTC":
        sys.exit("run with TZ=UTC (strftime_now formats local time; the C++ test pins UTC)")
    time.tzset()
    directory = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared" / "chat_templates"
    ctu.datetime = _FixedDatetime
    cases = []
    for name, source in templates(directory).items():
        for conversation_id, conversation in CONVERSATIONS.items():
            for add_generation_prompt in (False, True):
                case = {
                    "template": name,
                    "conversation": conversation_id,
                    "add_generation_prompt": add_generation_prompt,
                    "tools": "tools" in conversation,
                }
                try:
                    case["expected"] = render(source, conversation, add_generation_prompt)
                except Exception as e:  # the template (or jinja2) refused: record the message
                    case["error"] = str(e)
                    case["error_type"] = type(e).__name__
                cases.append(case)
    document = {
        "generator": "tools/chat_templates/record_expected.py",
        "versions": {"transformers": transformers.__version__, "jinja2": jinja2.__version__},
        "now_utc": FIXED_NOW_UTC,
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "smollm2_template": SMOLLM2_NAME,
        "conversations": CONVERSATIONS,
        "cases": cases,
    }
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    errors = sum("error" in c for c in cases)
    print(f"{len(cases)} cases ({errors} errors) -> {OUTPUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
