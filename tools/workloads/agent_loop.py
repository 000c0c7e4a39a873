#!/usr/bin/env python3
"""Writes a repetitive "agent loop" prompt set for drift bench (JSON lines, {"prompt": ...}).

An editing agent works on one small file (source code, or a short story for story models): every step shows the file as it stands, asks
for one edit and starts the updated file; the model's answer mostly re-types the file. Each step
is also retried (agents retry when a tool call fails), so some prompts repeat exactly. This is
the workload SuffixDecoding targets: the output copies the prompt (the request's own suffix
tree) and earlier answers (the global tree).

  python3 tools/workloads/agent_loop.py [--document code|story] [--steps N] [--retries 2] > /tmp/agent_loop.jsonl
  drift bench --config configs/stories260k-suffix.toml --prompts /tmp/agent_loop.jsonl
Deterministic: the same arguments give the same file.
"""
import argparse
import json

BASE_FILE = """import json
import os


class Inventory:
    def __init__(self, path):
        self.path = path
        self.items = {}

    def load(self):
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.items = json.load(f)
        return self.items

    def save(self):
        with open(self.path, "w") as f:
            json.dump(self.items, f, indent=2)

    def add(self, name, count):
        self.items[name] = self.items.get(name, 0) + count
        self.save()

    def remove(self, name, count):
        self.items[name] = max(0, self.items.get(name, 0) - count)
        self.save()

    def total(self):
        return sum(self.items.values())
"""

# (instruction, old text, new text): each applied to the file the step before left.
CODE_EDITS = [
    ("Rename the method total to count_all.", "def total(self)", "def count_all(self)"),
    ("Write the JSON without indentation in save.", "indent=2", "indent=0"),
    ("Rename the class Inventory to Stock.", "class Inventory:", "class Stock:"),
    ("Rename the attribute items to entries.", "self.items", "self.entries"),
    ("Open the file with an explicit encoding in load.", "open(self.path) as f", "open(self.path, encoding=\"utf-8\") as f"),
    ("Open the file with an explicit encoding in save.", "open(self.path, \"w\") as f", "open(self.path, \"w\", encoding=\"utf-8\") as f"),
    ("Rename the parameter name to key in add.", "def add(self, name, count)", "def add(self, key, count)"),
    ("Rename the parameter count to amount in remove.", "def remove(self, name, count)", "def remove(self, name, amount)"),
    ("Import sys after os.", "import os\n", "import os\nimport sys\n"),
    ("Rename load to read.", "def load(self)", "def read(self)"),
    ("Rename save to write.", "def save(self)", "def write(self)"),
    ("Rename the attribute path to filename.", "self.path", "self.filename"),
]

# The same loop over a short story, for models that only know stories (stories260K: 512 tokens
# of context, so the document is short).
BASE_STORY = """Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog Max.
One day, Lily found a big red ball under a tree. She threw the ball and Max ran to get it.
Max was very happy. Lily and Max played all day until the sun went down.
"""

STORY_EDITS = [
    ("Call the girl Sue.", "Lily", "Sue"),
    ("Make the ball blue.", "big red ball", "big blue ball"),
    ("Call the dog Spot.", "Max", "Spot"),
    ("Move the ball under a bush.", "under a tree", "under a bush"),
    ("Put them in the garden.", "in the park", "in the garden"),
    ("Make the dog sad at first.", "was very happy", "was sad, then happy"),
    ("End the day at night.", "until the sun went down", "until it was night"),
    ("Give the girl a cat.", "with her dog", "with her cat"),
]

DOCUMENTS = {"code": ("inventory.py", "python", BASE_FILE, CODE_EDITS),
             "story": ("story.txt", "text", BASE_STORY, STORY_EDITS)}

PROMPT = """You are an editing agent. Apply the requested edit and print the whole updated file.

File {name}:
```{kind}
{file}```

Edit {step}: {instruction}

Updated {name}:
```{kind}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--document", choices=sorted(DOCUMENTS), default="code", help="what the agent edits")
    parser.add_argument("--steps", type=int, default=0, help="edit steps (default: all the document has)")
    parser.add_argument("--retries", type=int, default=2, help="times each step's prompt is sent")
    args = parser.parse_args()
    name, kind, source, edits = DOCUMENTS[args.document]
    steps = args.steps or len(edits)
    if not 1 <= steps <= len(edits) or args.retries < 1:
        parser.error(f"--steps must be 1..{len(edits)} and --retries >= 1")
    for step, (instruction, old, new) in enumerate(edits[:steps], start=1):
        prompt = PROMPT.format(name=name, kind=kind, file=source, step=step, instruction=instruction)
        for _ in range(args.retries):
            print(json.dumps({"prompt": prompt}))
        assert old in source, f"edit {step}: {old!r} not in the file"
        source = source.replace(old, new)


if __name__ == "__main__":
    main()
