#!/usr/bin/env python3
"""Writes hf_edge_cases.json: Hugging Face tokenizers' ids and decoded text for edge strings
(Unicode whitespace including U+180E, invisible characters, combining marks, emoji ZWJ
sequences, mixed scripts, digit runs, contractions) with the Llama-3 and Qwen3 tokenizer.json
files in ../shared. The C++ tests read the JSON; they never run this script.

Run (from the repository root, with `pip install tokenizers==0.23.3`):
    python3 tests/core/tokenizer/hf_edge_cases.py ../shared > tests/core/tokenizer/hf_edge_cases.json
"""
import json
import sys

import tokenizers

TEXTS = [
    # U+180E MONGOLIAN VOWEL SEPARATOR: not White_Space since Unicode 6.3 (PCRE2's \s took it).
    "a\u180eb", "word \u180e word", "\u180e\u180e", "x\u180e\n", "1\u180e2", "!\u180e?", "x  \u180e",
    "x \u180eb", " \u180e!", " \u180e1", "\u180e's", "\t\t\u180e", "a\t \u180e\u180e hi",
    # White_Space characters beyond ASCII.
    "a\u00a0b", "a \u00a0 b", "100\u00a0km", "line\u2028next", "a \u2028 b", "para\u2029graph",
    "\u65e5\u672c\u3000\u8a9e", "\u3000\u3000x", "a\u0085b", "n\u202fm", "x\u205fy", "o\u1680gham",
    "em\u2003space  thin\u2009x", "tab\t\tand\x0bvt\x0cff", "a  \t\n  b", "end   ", "\r\n\r\nx",
    # Invisible characters that are not White_Space.
    "\ufeffHello", "a\ufeff b", "zero\u200bwidth", "a \u200b b", "join\u200dme", "lrm\u200ex",
    # Combining marks.
    "cafe\u0301", "e\u0301\u0301", "\u0301start", "Z\u0351\u036b\u0343\u036a", "n\u0303o \u0303",
    # Emoji: ZWJ sequences, skin tones, flags, keycaps.
    "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 family", "\U0001F3F3\ufe0f\u200d\U0001F308",
    "\U0001F44D\U0001F3FD ok", "\U0001F1EF\U0001F1F5\U0001F1EB\U0001F1F7", "1\ufe0f\u20e3 #\ufe0f\u20e3",
    # Mixed scripts.
    "Hello \u043c\u0438\u0440 \u4e16\u754c \u0645\u0631\u062d\u0628\u0627 \u0928\u092e\u0938\u094d\u0924\u0947",
    "abc\u0430\u0431\u0432123\u4e00\u4e8c", "\ud55c\uad6d\uc5b4\ud14d\uc2a4\ud2b8",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35", "\u05e9\u05dc\u05d5\u05dd world",
    # Digit runs longer than three, in several scripts.
    "1234567", "12345 678901", "x1234y", "\u0663\u0664\u0665\u0666\u0667", "\u0967\u0968\u0969\u096a\u096b",
    "\uff11\uff12\uff13\uff14", "3.14159265", "2024-09-17T12:34:56Z",
    # Contractions, any case.
    "I'M here", "you're", "THEY'LL go", "we've", "don't", "It's", "I'd've", "'S 'T 'RE",
    # Punctuation and symbol runs.
    "!!!???...", "a--b__c", "$100,000.00", "\u201cquoted\u201d \u2014 dash", "<|not special|>",
]


def main():
    shared = sys.argv[1]
    cases = []
    loaded = {name: tokenizers.Tokenizer.from_file(f"{shared}/tokenizers/{name}/tokenizer.json")
              for name in ("llama3", "qwen3")}
    for text in TEXTS:
        case = {"text": text}
        for name, tok in loaded.items():
            ids = tok.encode(text, add_special_tokens=False).ids
            case[name] = {"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)}
        cases.append(case)
    doc = {
        "generated_by": "python3 tests/core/tokenizer/hf_edge_cases.py ../shared",
        "tokenizers_version": tokenizers.__version__,
        "add_special_tokens": False,
        "cases": cases,
    }
    # One case per line, so a diff shows which strings changed.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, ensure_ascii=True)[:-1]
    lines = ",\n  ".join(json.dumps(c, ensure_ascii=True) for c in cases)
    sys.stdout.write(f'{head}, "cases": [\n  {lines}\n]}}\n')


if __name__ == "__main__":
    main()
