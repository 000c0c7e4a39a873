#!/usr/bin/env python3
"""Records JSON Schema test cases for the grammar engine (tests/core/grammar/json_schema_grammar_test.cc).

Random schemas in the subset core/grammar/json_schema_grammar.h compiles, each with instances that
are valid and mutations that may not be, serialized compactly and indented (properties in the
schema's order), and python-jsonschema's verdict on each string: the reference the test compares
the grammar's accept / reject with.

    python3 tools/grammar/json_schema_cases.py > tests/data/grammar/json_schema_cases.json
"""
import copy
import json
import random
import sys

import jsonschema

PATTERNS = [r"^[a-z]{2,5}$", r"^\d{3}-\d{4}$", r"^(yes|no|maybe)$", r"^[A-Z][a-z]*( [A-Z][a-z]*)?$"]
WORDS = ["alpha", "beta", "Gamma", "d", "", "é", "日本", "x y", 'quote"d', "back\\slash", "tab\t"]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.defs = {}

    def schema(self, depth=0):
        r = self.r
        kinds = ["string", "integer", "number", "boolean", "null", "enum", "const"]
        if depth < 3:
            kinds += ["object", "object", "array", "anyOf", "nullable", "ref"]
        k = r.choice(kinds)
        if k == "string":
            s = {"type": "string"}
            c = r.random()
            if c < 0.25:
                s["pattern"] = r.choice(PATTERNS)
            elif c < 0.5:
                s["minLength"] = r.randint(0, 3)
                s["maxLength"] = s["minLength"] + r.randint(0, 4)
            elif c < 0.6:
                s["format"] = "date"
            return s
        if k in ("integer", "number", "boolean", "null"):
            return {"type": k}
        if k == "enum":
            return {"enum": r.sample(["red", "green", "blue", 1, 2.5, None, True, "x y"], r.randint(1, 4))}
        if k == "const":
            return {"const": r.choice(["fixed", 7, False, None])}
        if k == "object":
            props = {}
            for i in range(r.randint(0, 4)):
                props[r.choice(["id", "name", "tags", "value", "kind", "nested", "ok"]) + str(i)] = self.schema(depth + 1)
            req = [p for p in props if r.random() < 0.6]
            s = {"type": "object", "properties": props, "required": req, "additionalProperties": False}
            return s
        if k == "array":
            s = {"type": "array", "items": self.schema(depth + 1)}
            if r.random() < 0.6:
                s["minItems"] = r.randint(0, 2)
                s["maxItems"] = s["minItems"] + r.randint(0, 3)
            return s
        if k == "anyOf":
            return {"anyOf": [self.schema(depth + 1), self.schema(depth + 1)]}
        if k == "nullable":
            s = self.schema(depth + 1)
            return {"anyOf": [s, {"type": "null"}]}
        name = f"d{len(self.defs)}"
        self.defs[name] = None  # reserved before the nested schema may add its own
        self.defs[name] = self.schema(depth + 1)
        return {"$ref": f"#/$defs/{name}"}

    def instance(self, s, root):
        r = self.r
        if "$ref" in s:
            return self.instance(root["$defs"][s["$ref"].split("/")[-1]], root)
        if "anyOf" in s:
            return self.instance(r.choice(s["anyOf"]), root)
        if "enum" in s:
            return r.choice(s["enum"])
        if "const" in s:
            return s["const"]
        t = s["type"]
        if t == "string":
            if "pattern" in s:
                return {PATTERNS[0]: "abc", PATTERNS[1]: "555-1234", PATTERNS[2]: "maybe", PATTERNS[3]: "New York"}[s["pattern"]]
            if s.get("format") == "date":
                return "2024-02-29"
            w = r.choice(WORDS)
            lo, hi = s.get("minLength", 0), s.get("maxLength", 99)
            w = (w + "abcdefgh")[:max(lo, min(hi, len(w)))]
            return w
        if t == "integer":
            return r.choice([0, -3, 42, 123456789])
        if t == "number":
            return r.choice([0, 1.5, -2.25, 3e-05, 1e20, 7])
        if t == "boolean":
            return r.choice([True, False])
        if t == "null":
            return None
        if t == "object":
            return {k: self.instance(v, root) for k, v in s["properties"].items()
                    if k in s["required"] or r.random() < 0.5}
        if t == "array":
            lo, hi = s.get("minItems", 0), s.get("maxItems", 3)
            return [self.instance(s["items"], root) for _ in range(r.randint(lo, hi))]
        raise ValueError(s)

    def mutate(self, value):
        r = self.r
        c = r.random()
        if isinstance(value, dict) and value and c < 0.3:
            v = dict(value)
            del v[r.choice(list(v))]
            return v
        if isinstance(value, dict) and c < 0.5:
            v = dict(value)
            v["extra"] = 1
            return v
        if isinstance(value, list) and c < 0.4:
            return value + value[:1] * 4 if value else [1]
        if isinstance(value, dict) and value and c < 0.8:
            k = r.choice(list(value))
            v = dict(value)
            v[k] = self.mutate(v[k])
            return v
        if isinstance(value, list) and value and c < 0.8:
            v = list(value)
            i = r.randrange(len(v))
            v[i] = self.mutate(v[i])
            return v
        return r.choice(["oops", 3, None, True, [], {}, "2024-13-01", 1.25])


def serializations(value):
    return [json.dumps(value, separators=(",", ":")), json.dumps(value, indent=2, ensure_ascii=False),
            json.dumps(value)]


def main():
    cases = []
    for seed in range(120):
        g = Gen(seed)
        schema = g.schema()
        if g.defs:
            schema = dict(schema, **{"$defs": g.defs}) if isinstance(schema, dict) else schema
        validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
        strings = []
        for _ in range(6):
            good = g.instance(schema, schema)
            for v in (good, g.mutate(good), g.mutate(good)):
                for text in serializations(v):
                    strings.append({"text": text, "valid": validator.is_valid(v)})
        # Malformed JSON is never valid.
        strings.append({"text": serializations(g.instance(schema, schema))[0] + "}", "valid": False})
        cases.append({"schema": schema, "strings": strings})
    json.dump({"generator": "tools/grammar/json_schema_cases.py", "jsonschema": jsonschema.__version__,
               "cases": cases}, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
