#!/usr/bin/env python3
"""`drift serve` driven by the official `openai` client, on the CPU backend, over loopback.

References are independent of the server: `drift generate` (the offline engine, one process per
reference set) for greedy text and token counts, and `drift score` (teacher-forced logits) for
logprobs. Metrics are read with prometheus_client's parser. What each class starts:

- SmolLM2Api: configs/smollm2.toml (a real chat model with its template and the prefix cache)
  with --api-key: completions and chat, streaming and not, stop strings, usage, logprobs, auth.
- StoriesLoadAndFaults: stories260K with the ngram draft provider: 64 concurrent streaming
  clients (half without speculation), faults beside good requests, metrics, page accounting.
- HttpTransport: stories260K with --http-threads 2: body limits whatever the framing, 405 and
  415, keep-alive connections reused, slow-header clients unable to starve the HTTP threads.
- QueueAndShutdown: stories260K with --max-requests 2: 429 beyond the bound, then SIGTERM with
  a request in flight (it finishes; new ones get 503; exit code 0).

Run through run_openai_api_test.sh (ctest: server.openai_api). The test data ships in the
checkout's tests/data (DRIFT_TEST_DATA overrides it); a missing file is a failure naming it.
"""
import argparse
import concurrent.futures
import http.client
import json
import math
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import jsonschema
import openai
from prometheus_client.parser import text_string_to_metric_families

ARGS = None
SMOLLM2_PROMPTS = ["What is the capital of France?", "Write one sentence about the sea."]
STORY_PROMPTS = [
    "Once upon a time", "Lily went to the park", "The little dog", "Tom had a red ball",
    "One day, a cat", "The sun was shining", "Sam and his mom", "There was a big tree",
    "A bird sat on", "The girl was sad because", "Max liked to play", "In a small house",
    "The boy found a", "Anna wanted to", "It was a rainy day", "The bunny hopped",
]


def data_dir():
    return os.environ.get("DRIFT_TEST_DATA") or ARGS.default_data or os.path.join(ARGS.root, "tests", "data")


def require(path, hint):
    if os.path.exists(path):
        return path
    raise AssertionError(f"test data missing: {path} ({hint})")


def skip_model_heavy_under_sanitizers():
    """SmolLM2 runs about 250x slower under ASan (seconds a token): its classes run in the Release
    stage only; the sanitized stage serves stories260K (load, faults, metrics, SIGTERM)."""
    if ARGS.sanitized:
        raise unittest.SkipTest("SmolLM2 under the sanitizers is too slow for CI; covered by the Release build's run")


def smollm2_config():
    skip_model_heavy_under_sanitizers()
    require(os.path.join(ARGS.root, "models/smollm2-135m-instruct/model.safetensors"), "run python3 scripts/fetch_model.py")
    return os.path.join(ARGS.root, "configs/smollm2.toml")


def stories_config(tmp):
    """stories260K with the ngram draft provider: [speculative] on by default."""
    model = require(os.path.join(data_dir(), "models/stories260K"), "DRIFT_TEST_DATA")
    path = os.path.join(tmp, "stories-ngram.toml")
    with open(path, "w") as f:
        f.write(f"""schema_version = 1
[model]
path = "{model}"
[engine]
backend = "cpu"
max_batch_size = 64
max_num_tokens = 512
max_seq_len = 256
check_kv_integrity = true
[kv_cache]
block_size = 16
memory_mb = 16
[generation]
max_new_tokens = 64
temperature = 0.0
[speculative]
enabled = true
draft_provider = "ngram"
max_draft_tokens = 4
[[plugins]]
name = "ngram"
[plugins.ngram]
min_ngram = 1
max_ngram = 3
""")
    return path


def generate(config, prompts, max_tokens, chat=False, ignore_eos=False, extra=()):
    """The offline engine's results (drift generate --json), one per prompt."""
    cmd = [ARGS.drift, "generate", "--config", config, "--json", "--max-new-tokens", str(max_tokens), *extra]
    if chat:
        cmd.append("--chat")
    if ignore_eos:
        cmd.append("--ignore-eos")
    for p in prompts:
        cmd += ["--prompt", p]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    return [line for line in lines if "summary" not in line]


def score_logits(config, ids):
    """Teacher-forced next-token logits for `ids` from drift score: a list of rows."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "scores.safetensors")
        run = subprocess.run([ARGS.drift, "score", "--config", config, "--ids", ",".join(map(str, ids)), "--out", out],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        with open(out, "rb") as f:
            blob = f.read()
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + header_len])
    logits = header["logits"]
    assert logits["dtype"] == "F32"
    rows, vocab = logits["shape"]
    begin, end = logits["data_offsets"]
    values = struct.unpack(f"<{rows * vocab}f", blob[8 + header_len + begin:8 + header_len + end])
    return [values[r * vocab:(r + 1) * vocab] for r in range(rows)]


def log_softmax_at(row, token):
    peak = max(row)
    log_z = peak + math.log(sum(math.exp(x - peak) for x in row))
    return row[token] - log_z


class Server:
    """A `drift serve` process on a free loopback port."""

    def __init__(self, config, *extra):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen([ARGS.drift, "serve", "--config", config, "--port", "0", *extra],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if "listening on http://" not in line:
            self.proc.kill()
            raise AssertionError(f"drift serve did not start: {line!r}\n{self.logs()}")
        self.port = int(line.rsplit(":", 1)[1])
        self.base = f"http://127.0.0.1:{self.port}"

    def logs(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def client(self, api_key="unused", **kwargs):
        return openai.OpenAI(base_url=self.base + "/v1", api_key=api_key, max_retries=0, timeout=300, **kwargs)

    def request(self, method, path, body=None, headers=None):
        """A raw request: (status, parsed JSON or text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        payload = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
        conn.request(method, path, body=payload, headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        text = response.read().decode()
        conn.close()
        try:
            return response.status, json.loads(text)
        except json.JSONDecodeError:
            return response.status, text

    def metrics(self):
        status, text = self.request("GET", "/metrics")
        assert status == 200
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return samples

    def stop(self, timeout=120):
        """SIGTERM; the server must exit 0."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"drift serve did not exit within {timeout} s of SIGTERM\n{self.logs()}")
        rest = self.proc.stdout.read()
        self.proc.stdout.close()
        logs = self.logs()
        self.log.close()
        os.unlink(self.log.name)
        assert code == 0, f"drift serve exited {code}\n{rest}\n{logs}"


def metric(samples, name, **labels):
    return samples.get((name, tuple(sorted((k, str(v)) for k, v in labels.items()))), 0.0)


def error_of(status_and_body):
    status, body = status_and_body
    assert isinstance(body, dict) and "error" in body, body
    return status, body["error"]


def stream_text(stream):
    """Concatenated text, finish reason and usage of a streamed completion or chat completion."""
    text, finish, usage = "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            piece = choice.delta.content if hasattr(choice, "delta") else choice.text
            text += piece or ""
            finish = choice.finish_reason or finish
    return text, finish, usage


def wait_until(predicate, timeout=60, interval=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class SmolLM2Api(unittest.TestCase):
    KEY = "test-key-123"

    @classmethod
    def setUpClass(cls):
        cls.config = smollm2_config()
        cls.plain = generate(cls.config, SMOLLM2_PROMPTS, 24)
        cls.chat = generate(cls.config, SMOLLM2_PROMPTS, 24, chat=True)
        cls.server = Server(cls.config, "--api-key", cls.KEY)
        cls.client = cls.server.client(cls.KEY)
        cls.model = "smollm2-135m-instruct"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_models_lists_the_served_model(self):
        ids = [m.id for m in self.client.models.list().data]
        self.assertEqual(ids, [self.model])

    def test_completion_greedy_text_and_usage_equal_drift_generate(self):
        for prompt, ref in zip(SMOLLM2_PROMPTS, self.plain):
            r = self.client.completions.create(model=self.model, prompt=prompt, max_tokens=24, temperature=0)
            self.assertEqual(r.choices[0].text, ref["text"])
            self.assertEqual(r.choices[0].finish_reason, ref["finish_reason"])
            self.assertEqual(r.usage.prompt_tokens, len(ref["prompt_ids"]))
            self.assertEqual(r.usage.completion_tokens, len(ref["output_ids"]))
            self.assertEqual(r.usage.total_tokens, len(ref["prompt_ids"]) + len(ref["output_ids"]))

    def test_completion_stream_equals_drift_generate(self):
        for prompt, ref in zip(SMOLLM2_PROMPTS, self.plain):
            stream = self.client.completions.create(model=self.model, prompt=prompt, max_tokens=24, temperature=0,
                                                    stream=True, stream_options={"include_usage": True})
            text, finish, usage = stream_text(stream)
            self.assertEqual(text, ref["text"])
            self.assertEqual(finish, ref["finish_reason"])
            self.assertEqual((usage.prompt_tokens, usage.completion_tokens), (len(ref["prompt_ids"]), len(ref["output_ids"])))

    def test_chat_greedy_and_streamed_equal_drift_generate_chat(self):
        for prompt, ref in zip(SMOLLM2_PROMPTS, self.chat):
            messages = [{"role": "user", "content": prompt}]
            r = self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=24, temperature=0)
            self.assertEqual(r.choices[0].message.role, "assistant")
            self.assertEqual(r.choices[0].message.content, ref["text"])
            self.assertEqual(r.choices[0].finish_reason, ref["finish_reason"])
            self.assertEqual((r.usage.prompt_tokens, r.usage.completion_tokens), (len(ref["prompt_ids"]), len(ref["output_ids"])))
            stream = self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=24, temperature=0,
                                                         stream=True, stream_options={"include_usage": True})
            text, finish, usage = stream_text(stream)
            self.assertEqual(text, ref["text"])
            self.assertEqual(finish, ref["finish_reason"])
            self.assertEqual(usage.completion_tokens, len(ref["output_ids"]))

    def test_n_choices_are_the_seeded_requests_alone_and_stream_under_their_index(self):
        """n > 1: choice i is the request alone with seed + i (its prompt's KV shared, not recomputed);
        streamed, each choice's deltas carry its index and join to the same text."""
        ask = dict(model=self.model, messages=[{"role": "user", "content": SMOLLM2_PROMPTS[0]}], max_tokens=16,
                   temperature=0.9, seed=11)
        r = self.client.chat.completions.create(n=3, **ask)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        alone = [self.client.chat.completions.create(**{**ask, "seed": 11 + i}) for i in range(3)]
        texts = [c.message.content for c in r.choices]
        self.assertEqual(texts, [a.choices[0].message.content for a in alone])
        self.assertGreater(len(set(texts)), 1, "the choices drew from one stream")
        self.assertEqual(r.usage.prompt_tokens, alone[0].usage.prompt_tokens)
        self.assertEqual(r.usage.completion_tokens, sum(a.usage.completion_tokens for a in alone))
        streamed, finishes, usage = {}, {}, None
        for chunk in self.client.chat.completions.create(n=3, stream=True, stream_options={"include_usage": True}, **ask):
            usage = chunk.usage or usage
            for choice in chunk.choices:
                streamed[choice.index] = streamed.get(choice.index, "") + (choice.delta.content or "")
                finishes[choice.index] = choice.finish_reason or finishes.get(choice.index)
        self.assertEqual([streamed[i] for i in range(3)], texts)
        self.assertEqual([finishes[i] for i in range(3)], [c.finish_reason for c in r.choices])
        self.assertEqual(usage.completion_tokens, r.usage.completion_tokens)
        completion = self.client.completions.create(model=self.model, prompt=SMOLLM2_PROMPTS[1], max_tokens=8,
                                                    temperature=1.0, seed=5, n=2)
        self.assertEqual([c.index for c in completion.choices], [0, 1])
        second = self.client.completions.create(model=self.model, prompt=SMOLLM2_PROMPTS[1], max_tokens=8,
                                                temperature=1.0, seed=6)
        self.assertEqual(completion.choices[1].text, second.choices[0].text)

    def test_stop_strings_cut_exactly_and_are_never_emitted(self):
        ref = self.chat[1]["text"]
        # A stop string from the middle of the reply, starting inside a word: it spans tokens.
        start = len(ref) // 2
        stop = ref[start:start + 6]
        first = ref.index(stop)
        messages = [{"role": "user", "content": SMOLLM2_PROMPTS[1]}]
        r = self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=24, temperature=0, stop=[stop, "zzzz"])
        self.assertEqual(r.choices[0].message.content, ref[:first])
        self.assertEqual(r.choices[0].finish_reason, "stop")
        text, finish, _ = stream_text(self.client.chat.completions.create(
            model=self.model, messages=messages, max_tokens=24, temperature=0, stop=stop, stream=True))
        self.assertEqual(text, ref[:first])
        self.assertEqual(finish, "stop")

    def test_include_stop_str_in_output_keeps_the_matched_stop_string(self):
        ref = self.chat[1]["text"]
        start = len(ref) // 2
        stop = ref[start:start + 6]
        first = ref.index(stop)
        messages = [{"role": "user", "content": SMOLLM2_PROMPTS[1]}]
        for stream in (False, True):
            r = self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=24, temperature=0,
                                                    stop=[stop], stream=stream,
                                                    extra_body={"include_stop_str_in_output": True})
            text = stream_text(r)[0] if stream else r.choices[0].message.content
            self.assertEqual(text, ref[:first + len(stop)])

    def test_penalties_and_logit_bias_equal_drift_generate_with_the_same_flags(self):
        # The official client sends presence/frequency penalties and logit_bias as OpenAI's
        # fields, repetition_penalty and min_tokens as vLLM's extra body.
        flags = ["--presence-penalty", "0.6", "--frequency-penalty", "0.4", "--repetition-penalty", "1.3",
                 "--logit-bias", "28=-100", "--min-tokens", "10"]
        refs = generate(self.config, SMOLLM2_PROMPTS[:2], 24, extra=flags)
        for prompt, ref, plain in zip(SMOLLM2_PROMPTS[:2], refs, self.plain):
            r = self.client.completions.create(model=self.model, prompt=prompt, max_tokens=24, temperature=0,
                                               presence_penalty=0.6, frequency_penalty=0.4, logit_bias={"28": -100},
                                               extra_body={"repetition_penalty": 1.3, "min_tokens": 10})
            self.assertEqual(r.choices[0].text, ref["text"])
            self.assertEqual(r.usage.completion_tokens, len(ref["output_ids"]))
            self.assertNotIn(28, ref["output_ids"])
            self.assertNotEqual(ref["output_ids"], plain["output_ids"])  # the shaping shows

    def test_chat_rendering_fields_change_the_prompt(self):
        """add_generation_prompt (default true) and continue_final_message reach the template."""
        messages = [{"role": "user", "content": SMOLLM2_PROMPTS[0]}]
        usage = lambda **extra: self.client.chat.completions.create(
            model=self.model, messages=messages + extra.pop("more", []), max_tokens=1, temperature=0,
            extra_body=extra).usage.prompt_tokens
        with_prompt = usage()
        self.assertEqual(with_prompt, len(self.chat[0]["prompt_ids"]))
        self.assertLess(usage(add_generation_prompt=False), with_prompt)  # no "<|im_start|>assistant\n"
        # The reply continues the open assistant message: its prompt ends with that message's text.
        opened = usage(more=[{"role": "assistant", "content": "The capital"}], continue_final_message=True,
                       add_generation_prompt=False)
        closed = usage(more=[{"role": "assistant", "content": "The capital"}], add_generation_prompt=False)
        self.assertLess(opened, closed)  # no end-of-turn after it
        self.assertEqual(usage(chat_template_kwargs={"enable_thinking": False}), with_prompt)

    def test_an_over_long_prompt_is_refused_before_it_is_tokenized(self):
        """16 MB of text took seconds to tokenize before its length was checked. Refused first, it
        costs what reading the body costs: measured as the same body refused for n = 0 (checked
        before the prompt), so a loaded machine slows both alike. Each is the fastest of three
        tries: a load spike during one try is not the server's cost."""
        big = "All work and no play makes Jack a dull boy. " * (16 * 1024 * 1024 // 44)
        auth = {"Authorization": f"Bearer {self.KEY}"}

        def timed(path, body):
            payload = json.dumps(body)  # the client's serializing is not the server's cost
            fastest, result = float("inf"), None
            for _ in range(3):
                start = time.time()
                result = error_of(self.server.request("POST", path, payload, auth))
                fastest = min(fastest, time.time() - start)
            return result, fastest

        for path, body, param in [("/v1/completions", {"prompt": big, "max_tokens": 1}, "prompt"),
                                  ("/v1/chat/completions", {"messages": [{"role": "user", "content": big}]}, "messages")]:
            (status, error), elapsed = timed(path, body)
            self.assertEqual((status, error["param"]), (400, param))
            (_, reading_error), reading = timed(path, {**body, "n": 0})
            self.assertEqual(reading_error["param"], "n")
            self.assertLess(elapsed, reading + 0.5, f"{path}: {elapsed:.2f} s; reading the body took {reading:.2f} s")
            report_fault(f"16 MB {param} ({elapsed * 1000:.0f} ms, reading the body {reading * 1000:.0f} ms)", status,
                         error)

    def test_eight_chats_without_max_tokens_run_at_once(self):
        """configs/smollm2.toml: a batch of 8 and ~4,200 tokens of KV under guaranteed_no_evict. A chat
        without max_tokens used to reserve the rest of its 2,048-token context: 2 ran, 6 waited."""
        s = self.server
        body = {"model": self.model, "stream": True, "temperature": 0,
                "messages": [{"role": "user", "content": "Write a long story about a dragon who learns to cook."}]}
        socks = [open_stream(s.port, "/v1/chat/completions", body, self.KEY) for _ in range(8)]
        try:
            peak = [0]

            def all_running():
                peak[0] = max(peak[0], metric(s.metrics(), "drift_requests_running"))
                return peak[0] == 8
            self.assertTrue(wait_until(all_running, timeout=60), f"at most {peak[0]} of 8 chats ran at once")
        finally:
            for sock in socks:
                sock.close()
        idle = lambda: metric(s.metrics(), "drift_requests_running") + metric(s.metrics(), "drift_requests_waiting") == 0
        self.assertTrue(wait_until(idle), "the closed streams were not aborted")

    def test_logprobs_equal_teacher_forced_scores(self):
        ref = generate(self.config, ["Once upon a time"], 8, ignore_eos=True)[0]
        r = self.client.completions.create(model=self.model, prompt="Once upon a time", max_tokens=8, temperature=0, logprobs=3,
                                           extra_body={"ignore_eos": True})
        lp = r.choices[0].logprobs
        self.assertEqual(len(lp.token_logprobs), 8)
        rows = score_logits(self.config, ref["prompt_ids"] + ref["output_ids"][:8])
        prompt_len = len(ref["prompt_ids"])
        for i, token in enumerate(ref["output_ids"][:8]):
            expected = log_softmax_at(rows[prompt_len - 1 + i], token)
            self.assertAlmostEqual(lp.token_logprobs[i], expected, delta=1e-3)
            self.assertEqual(len(lp.top_logprobs[i]), 3)
            # Greedy: the chosen token is the most likely one.
            self.assertAlmostEqual(max(lp.top_logprobs[i].values()), lp.token_logprobs[i], delta=1e-6)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        chat = self.client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": SMOLLM2_PROMPTS[0]}],
                                                   max_tokens=6, temperature=0, logprobs=True, top_logprobs=2)
        content = chat.choices[0].logprobs.content
        self.assertEqual(len(content), chat.usage.completion_tokens)
        for entry in content:
            self.assertEqual(len(entry.top_logprobs), 2)
            self.assertEqual(entry.top_logprobs[0].token, entry.token)
            self.assertLessEqual(entry.logprob, 0.0)
            self.assertEqual(bytes(entry.bytes).decode(errors="replace"), entry.token)

    def test_wrong_or_missing_api_key_is_401_and_health_stays_open(self):
        with self.assertRaises(openai.AuthenticationError) as caught:
            self.server.client("wrong").completions.create(model=self.model, prompt="Hi", max_tokens=2)
        self.assertEqual(caught.exception.status_code, 401)
        status, body = error_of(self.server.request("POST", "/v1/completions", {"prompt": "Hi"}))
        self.assertEqual((status, body["type"]), (401, "authentication_error"))
        self.assertEqual(self.server.request("GET", "/health")[0], 200)

    def test_unknown_model_and_unconfigured_provider_name_the_field(self):
        with self.assertRaises(openai.NotFoundError) as caught:
            self.client.completions.create(model="gpt-4", prompt="Hi", max_tokens=2)
        self.assertEqual(caught.exception.body["param"], "model")
        with self.assertRaises(openai.BadRequestError) as caught:
            self.client.completions.create(model=self.model, prompt="Hi", max_tokens=2,
                                           extra_body={"speculative": {"draft_provider": "eagle3"}})
        self.assertEqual(caught.exception.body["param"], "speculative.draft_provider")
        self.assertIn("not a configured draft provider", caught.exception.body["message"])


    def test_cache_salt_shares_prefix_pages_only_under_equal_salts(self):
        hits = lambda: metric(self.server.metrics(), "drift_prefix_cache_hit_tokens_total")
        messages = [{"role": "user", "content": "Tell me about salted caches, tenant by tenant."}]
        ask = lambda salt: self.client.chat.completions.create(model=self.model, messages=messages, max_tokens=4, temperature=0,
                                                               extra_body={"cache_salt": salt}).choices[0].message.content
        before = hits()
        first = ask("tenant-a")
        self.assertEqual(hits(), before)  # nothing cached under this salt yet
        self.assertEqual(ask("tenant-a"), first)
        after_same = hits()
        self.assertGreaterEqual(after_same - before, 16)  # at least one full page adopted
        self.assertEqual(ask("tenant-b"), first)
        self.assertEqual(hits(), after_same)  # another salt: no sharing

    def test_clients_that_disconnect_mid_stream_give_their_pages_back(self):
        """SmolLM2 makes a token in about 20 ms, so a stream is still running when its client leaves."""
        s = self.server
        finished = lambda: metric(s.metrics(), "drift_requests_finished_total", finish_reason="abort")
        aborted = finished()
        body = {"prompt": "Once upon a time", "max_tokens": 300, "ignore_eos": True, "stream": True}
        complete = lambda p: self.client.completions.create(model=self.model, prompt=p, max_tokens=24, temperature=0).choices[0].text
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            good = [pool.submit(complete, p) for p in SMOLLM2_PROMPTS]
            for _ in range(3):
                self.assertIn(b"data: ", open_stream_and_disconnect_authorized(s.port, body, self.KEY))
            self.assertEqual([f.result() for f in good], [ref["text"] for ref in self.plain])
        self.assertTrue(wait_until(lambda: finished() == aborted + 3), "the disconnected requests were not aborted")

        def only_cached_pages_in_use():
            m = s.metrics()
            used = metric(m, "drift_kv_pages_total") - metric(m, "drift_kv_pages_free")
            return (used == metric(m, "drift_prefix_cache_pages_held") and metric(m, "drift_requests_running") == 0
                    and metric(m, "drift_requests_waiting") == 0)
        self.assertTrue(wait_until(only_cached_pages_in_use), f"pages still in use: {s.metrics()}")
        report_fault("client disconnects mid-stream (x3)", "aborted, pages freed", {})


# A person record with nested objects, enums and bounded arrays: what an agent asks for.
PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer"},
        "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
                                                     "country": {"enum": ["France", "Spain", "Italy", "Other"]}},
                    "required": ["city", "country"], "additionalProperties": False},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
        "employed": {"type": "boolean"},
    },
    "required": ["name", "age", "address", "employed"],
    "additionalProperties": False,
}
PERSON_PROMPT = "Invent a person who lives in Paris and describe them as JSON."

WEATHER_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 40},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}}},
    {"type": "function", "function": {
        "name": "search_web", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 60}},
                       "required": ["query"]}}},
]
WEATHER_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in WEATHER_TOOLS}


def streamed_tool_calls(stream):
    """Content, tool calls ((name, arguments) by index, deltas joined) and finish reason of a stream."""
    content, calls, finish = "", {}, None
    for chunk in stream:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                name, arguments = calls.get(call.index, ("", ""))
                calls[call.index] = (name + (call.function.name or ""), arguments + (call.function.arguments or ""))
            finish = choice.finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


def smollm2_speculative_config(tmp):
    """configs/smollm2.toml with the ngram and suffix_cache draft providers (off unless a request asks)."""
    base = smollm2_config()
    model = os.path.join(ARGS.root, "models/smollm2-135m-instruct")
    path = os.path.join(tmp, "smollm2-speculative.toml")
    with open(path, "w") as f:
        f.write(f"""schema_version = 1
[model]
path = "{model}"
[engine]
backend = "cpu"
max_batch_size = 8
max_num_tokens = 512
max_seq_len = 2048
[kv_cache]
block_size = 16
memory_mb = 192
[generation]
max_new_tokens = 256
temperature = 0.0
[speculative]
enabled = false
max_draft_tokens = 8
[[plugins]]
name = "ngram"
[[plugins]]
name = "suffix_cache"
""")
    assert os.path.exists(base)
    return path


class SmolLM2StructuredOutput(unittest.TestCase):
    """Structured output through the official client: json_schema outputs validate (greedy and
    sampled), guided fields hold, and speculation (ngram, suffix_cache) changes no greedy output."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.server = Server(smollm2_speculative_config(cls.tmp))
        cls.client = cls.server.client()
        cls.model = "smollm2-135m-instruct"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def chat(self, content, max_tokens=200, **kwargs):
        return self.client.chat.completions.create(model=self.model, messages=[{"role": "user", "content": content}],
                                                   max_tokens=max_tokens, **kwargs)

    def test_json_schema_outputs_validate_greedy_and_sampled(self):
        response_format = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON_SCHEMA}}
        for temperature, seed in [(0, None), (0.8, 1), (0.8, 2), (1.0, 3)]:
            r = self.chat(PERSON_PROMPT, temperature=temperature, seed=seed, response_format=response_format)
            choice = r.choices[0]
            self.assertEqual(choice.finish_reason, "stop", choice.message.content)
            jsonschema.validate(json.loads(choice.message.content), PERSON_SCHEMA)
        # Streamed, the deltas join to a valid document too.
        text, finish, _ = stream_text(self.chat(PERSON_PROMPT, temperature=0, response_format=response_format, stream=True))
        self.assertEqual(finish, "stop")
        jsonschema.validate(json.loads(text), PERSON_SCHEMA)

    def test_json_object_regex_and_choice_hold(self):
        r = self.chat("Give me a short JSON object with a cat's name and age.", max_tokens=400, temperature=0,
                      response_format={"type": "json_object"})
        self.assertEqual(r.choices[0].finish_reason, "stop", r.choices[0].message.content)
        self.assertIsInstance(json.loads(r.choices[0].message.content), dict)
        r = self.chat("What is the date of the moon landing?", temperature=0,
                      extra_body={"guided_regex": r"\d{4}-\d{2}-\d{2}"})
        self.assertRegex(r.choices[0].message.content, r"^\d{4}-\d{2}-\d{2}$")
        r = self.chat("Is Paris in France?", temperature=0.7, seed=5, extra_body={"guided_choice": ["yes", "no"]})
        self.assertIn(r.choices[0].message.content, ["yes", "no"])

    def test_greedy_outputs_equal_with_and_without_ngram_and_suffix_speculation(self):
        asks = [{"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON_SCHEMA}}},
                {"extra_body": {"guided_regex": r"(The answer is [a-zA-Z ]{1,40}\. ){1,3}"}}]
        for ask in asks:
            extra = dict(ask.get("extra_body", {}))
            fmt = {k: v for k, v in ask.items() if k != "extra_body"}
            plain = self.chat(PERSON_PROMPT, temperature=0, extra_body={**extra, "speculative": {"enabled": False}}, **fmt)
            for provider in ("ngram", "suffix_cache"):
                spec = self.chat(PERSON_PROMPT, temperature=0,
                                 extra_body={**extra, "speculative": {"draft_provider": provider}}, **fmt)
                self.assertEqual(spec.choices[0].message.content, plain.choices[0].message.content, provider)
                self.assertEqual(spec.usage.completion_tokens, plain.usage.completion_tokens, provider)

    def test_tool_calls_parse_and_validate_required_named_and_streamed(self):
        """SmolLM2's template prints no tools: drift describes them (Hermes syntax) and reads the
        <tool_call> blocks back. Forced calls always parse and validate against their function's
        schema, greedy and sampled; streamed, the deltas join to the same calls."""
        messages = [{"role": "user", "content": "What is the weather in Paris, in celsius?"}]
        asks = [("required", 0, None), ("required", 0.8, 1), ("required", 1.0, 2),
                ({"type": "function", "function": {"name": "search_web"}}, 0.8, 3)]
        for tool_choice, temperature, seed in asks:
            r = self.client.chat.completions.create(model=self.model, messages=messages, tools=WEATHER_TOOLS,
                                                    tool_choice=tool_choice, parallel_tool_calls=False,
                                                    temperature=temperature, seed=seed, max_tokens=200)
            choice = r.choices[0]
            self.assertEqual(choice.finish_reason, "tool_calls", choice.message)
            self.assertEqual(len(choice.message.tool_calls), 1, choice.message)
            call = choice.message.tool_calls[0]
            self.assertTrue(call.id.startswith("call_"))
            self.assertEqual(call.type, "function")
            if isinstance(tool_choice, dict):
                self.assertEqual(call.function.name, "search_web")
            jsonschema.validate(json.loads(call.function.arguments), WEATHER_SCHEMAS[call.function.name])
            self.assertIsNone(choice.message.content)
        whole = self.client.chat.completions.create(model=self.model, messages=messages, tools=WEATHER_TOOLS,
                                                    tool_choice="required", temperature=0, max_tokens=200)
        content, calls, finish = streamed_tool_calls(self.client.chat.completions.create(
            model=self.model, messages=messages, tools=WEATHER_TOOLS, tool_choice="required", temperature=0,
            max_tokens=200, stream=True))
        self.assertEqual(finish, "tool_calls")
        self.assertEqual(content, "")
        self.assertEqual(calls, [(c.function.name, c.function.arguments) for c in whole.choices[0].message.tool_calls])

    def test_tool_calls_are_equal_with_and_without_speculation_and_history_renders_back(self):
        messages = [{"role": "user", "content": "Find news about Paris."}]
        ask = dict(model=self.model, messages=messages, tools=WEATHER_TOOLS, tool_choice="required", temperature=0,
                   max_tokens=200, parallel_tool_calls=False)
        plain = self.client.chat.completions.create(**ask, extra_body={"speculative": {"enabled": False}})
        for provider in ("ngram", "suffix_cache"):
            spec = self.client.chat.completions.create(**ask, extra_body={"speculative": {"draft_provider": provider}})
            self.assertEqual(spec.choices[0].message.tool_calls[0].function.arguments,
                             plain.choices[0].message.tool_calls[0].function.arguments, provider)
        # The call and its result go back through the template; the model answers in text (auto).
        call = plain.choices[0].message.tool_calls[0]
        history = messages + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call.id, "type": "function", "function": {"name": call.function.name,
                                                                  "arguments": call.function.arguments}}]},
            {"role": "tool", "tool_call_id": call.id, "content": "Paris hosts a jazz festival this week."}]
        r = self.client.chat.completions.create(model=self.model, messages=history, tools=WEATHER_TOOLS,
                                                tool_choice="none", temperature=0, max_tokens=30)
        self.assertIsNone(r.choices[0].message.tool_calls)
        self.assertTrue(r.choices[0].message.content)

    def test_a_schema_that_cannot_be_compiled_is_a_400_with_the_reason(self):
        with self.assertRaises(openai.BadRequestError) as caught:
            self.chat("x", response_format={"type": "json_schema", "json_schema": {
                "name": "bad", "schema": {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}}}}})
        error = caught.exception.body
        self.assertEqual(error["param"], "response_format.json_schema.schema")
        self.assertIn("multipleOf", error["message"])


class StoriesLoadAndFaults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.config = stories_config(cls.tmp.name)
        cls.lengths = [8, 32, 64]
        cls.refs = {n: generate(cls.config, STORY_PROMPTS, n) for n in cls.lengths}
        cls.server = Server(cls.config, "--api-key", "k")
        cls.client = cls.server.client("k")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp.cleanup()

    def assert_no_pages_in_use(self):
        def idle():
            m = self.server.metrics()
            return (metric(m, "drift_kv_pages_free") == metric(m, "drift_kv_pages_total")
                    and metric(m, "drift_requests_running") == 0 and metric(m, "drift_requests_waiting") == 0)
        self.assertTrue(wait_until(idle), f"pages still in use: {self.server.metrics()}")

    def one_client(self, i):
        """Client i: a streamed completion; odd clients turn speculation off."""
        prompt, n = STORY_PROMPTS[i % len(STORY_PROMPTS)], self.lengths[i % len(self.lengths)]
        extra = {"speculative": {"enabled": False}} if i % 2 else {}
        start = time.time()
        stamps = []
        text, finish, usage = "", None, None
        stream = self.client.completions.create(model="stories260K", prompt=prompt, max_tokens=n, temperature=0, stream=True,
                                                stream_options={"include_usage": True}, extra_body=extra)
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                if choice.text:
                    stamps.append(time.time())
                text += choice.text
                finish = choice.finish_reason or finish
        return {"i": i, "n": n, "prompt": prompt, "text": text, "finish": finish, "usage": usage, "start": start,
                "stamps": stamps, "end": time.time()}

    def test_64_concurrent_streaming_clients_equal_their_offline_references(self):
        before = self.server.metrics()
        wall = time.time()
        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            results = list(pool.map(self.one_client, range(64)))
        wall = time.time() - wall
        # The HTTP counter is bumped once a response is fully written, a moment after the client
        # read its last event.
        http_done = lambda: (metric(self.server.metrics(), "drift_http_requests_total", path="/v1/completions", status=200)
                             - metric(before, "drift_http_requests_total", path="/v1/completions", status=200)) >= 64
        self.assertTrue(wait_until(http_done, timeout=10))
        after = self.server.metrics()
        for r in results:
            ref = self.refs[r["n"]][STORY_PROMPTS.index(r["prompt"])]
            self.assertEqual(r["text"], ref["text"], f"client {r['i']}")
            self.assertEqual(r["finish"], ref["finish_reason"], f"client {r['i']}")
            self.assertEqual(r["usage"].completion_tokens, len(ref["output_ids"]))
            self.assertEqual(r["usage"].prompt_tokens, len(ref["prompt_ids"]))
        delta = lambda name, **labels: metric(after, name, **labels) - metric(before, name, **labels)
        tokens = sum(r["usage"].completion_tokens for r in results)
        self.assertEqual(delta("drift_generation_tokens_total"), tokens)
        self.assertEqual(delta("drift_prompt_tokens_total"), sum(r["usage"].prompt_tokens for r in results))
        self.assertEqual(delta("drift_requests_finished_total", finish_reason="stop")
                         + delta("drift_requests_finished_total", finish_reason="length"), 64)
        self.assertEqual(delta("drift_e2e_request_latency_seconds_count"), 64)
        self.assertEqual(delta("drift_time_to_first_token_seconds_count"), 64)
        self.assertEqual(delta("drift_inter_token_latency_seconds_count"), tokens - 64)
        self.assertEqual(delta("drift_http_requests_total", path="/v1/completions", status=200), 64)
        self.assertGreater(delta("drift_spec_draft_tokens_total"), 0)
        self.assertGreaterEqual(delta("drift_spec_draft_tokens_total"), delta("drift_spec_accepted_tokens_total"))
        self.assertGreater(metric(after, "drift_spec_acceptance_length"), 1.0)
        self.assert_no_pages_in_use()
        report_load(results, wall)

    def test_a_burst_of_connections_while_the_server_cannot_accept_is_queued_not_dropped(self):
        """With the process stopped, only the kernel's accept queue holds new connections. httplib's
        backlog of 5 let 6 of 64 in; the rest waited on SYN retries or, under load, were reset."""
        burst = 64
        os.kill(self.server.proc.pid, signal.SIGSTOP)
        try:
            def connect(_):
                try:
                    return socket.create_connection(("127.0.0.1", self.server.port), timeout=0.5)
                except OSError:
                    return None
            with concurrent.futures.ThreadPoolExecutor(burst) as pool:
                socks = list(pool.map(connect, range(burst)))
        finally:
            os.kill(self.server.proc.pid, signal.SIGCONT)
        connected = [s for s in socks if s is not None]
        try:
            self.assertEqual(len(connected), burst, "connections completed while the server was stopped")
            for s in connected:
                s.settimeout(60)
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            for s in connected:
                reply = b""
                while chunk := s.recv(4096):
                    reply += chunk
                self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:80])
        finally:
            for s in connected:
                s.close()

    def test_logprob_token_strings_read_in_place_with_sentencepiece(self):
        """stories260K's tokenizer is SentencePiece: a token decoded alone loses its leading space."""
        for stream in (False, True):
            r = self.client.completions.create(model="stories260K", prompt="Once upon a time", max_tokens=40, temperature=0,
                                               logprobs=2, stream=stream)
            chunks = list(r) if stream else [r]
            text = "".join(c.choices[0].text for c in chunks if c.choices)
            tokens, offsets = [], []
            for c in chunks:
                if c.choices and c.choices[0].logprobs:
                    tokens += c.choices[0].logprobs.tokens
                    offsets += c.choices[0].logprobs.text_offset
            self.assertEqual("".join(tokens), text)
            self.assertTrue(any(t.startswith(" ") for t in tokens))
            self.assertEqual(offsets, [len("".join(tokens[:i])) for i in range(len(tokens))])

    def test_faults_get_their_status_while_good_requests_complete_unchanged(self):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            good = [pool.submit(self.one_client, i) for i in range(8)]
            s = self.server
            auth = {"Authorization": "Bearer k"}
            cases = [
                ("malformed JSON", s.request("POST", "/v1/completions", '{"prompt": "x", ', auth), 400, None),
                ("body not an object", s.request("POST", "/v1/completions", "[1, 2]", auth), 400, None),
                ("JSON nested 100,000 deep", s.request("POST", "/v1/completions",
                                                       '{"prompt": ' + "[" * 100000 + "]" * 100000 + "}", auth), 400, None),
                ("wrong type", s.request("POST", "/v1/completions", {"prompt": "x", "temperature": "hot"}, auth), 400, "temperature"),
                ("wrong type in extension", s.request("POST", "/v1/completions",
                                                      {"prompt": "x", "speculative": {"enabled": "no"}}, auth), 400, "speculative.enabled"),
                ("unknown extension key", s.request("POST", "/v1/completions",
                                                    {"prompt": "x", "speculative": {"provider": "ngram"}}, auth), 400, "speculative.provider"),
                ("out of range", s.request("POST", "/v1/completions", {"prompt": "x", "top_p": 1.5}, auth), 400, "top_p"),
                ("huge max_tokens", s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 10**9}, auth), 400, "max_tokens"),
                ("over-long prompt", s.request("POST", "/v1/completions", {"prompt": [5] * 300}, auth), 400, "prompt"),
                ("token id out of range", s.request("POST", "/v1/completions", {"prompt": [1, 999999]}, auth), 400, "prompt[1]"),
                ("n above 128", s.request("POST", "/v1/completions", {"prompt": "x", "n": 129}, auth), 400, "n"),
                ("a number JSON cannot hold", s.request("POST", "/v1/completions", '{"prompt": "x", "temperature": 1e400}', auth), 400, None),
                ("temperature above OpenAI's 2", s.request("POST", "/v1/completions", {"prompt": "x", "temperature": 2.5}, auth), 400, "temperature"),
                ("seed below 0", s.request("POST", "/v1/completions", {"prompt": "x", "seed": -1}, auth), 400, "seed"),
                ("schema that cannot be compiled", s.request("POST", "/v1/completions",
                                                             {"prompt": "x", "guided_json": {"type": "integer", "minimum": 0}}, auth), 400, "guided_json"),
                ("min_tokens above max_tokens", s.request("POST", "/v1/completions",
                                                          {"prompt": "x", "max_tokens": 4, "min_tokens": 5}, auth), 400, "min_tokens"),
                ("logit_bias key not a token id", s.request("POST", "/v1/completions",
                                                            {"prompt": "x", "logit_bias": {"a": 1}}, auth), 400, 'logit_bias["a"]'),
                ("max_tokens != max_completion_tokens", s.request("POST", "/v1/completions",
                                                                  {"prompt": "x", "max_tokens": 4, "max_completion_tokens": 5}, auth), 400, "max_completion_tokens"),
                ("over-long token list", s.request("POST", "/v1/completions", {"prompt": [5] * 100000}, auth), 400, "prompt"),
                ("stop of wrong type", s.request("POST", "/v1/completions", {"prompt": "x", "stop": [1]}, auth), 400, "stop[0]"),
                ("chat without a template", s.request("POST", "/v1/chat/completions",
                                                      {"messages": [{"role": "user", "content": "hi"}]}, auth), 400, "messages"),
                ("bad API key", s.request("POST", "/v1/completions", {"prompt": "x"}, {"Authorization": "Bearer nope"}), 401, None),
                ("unknown route", s.request("GET", "/v1/nothing", None, auth), 404, None),
                ("unknown model", s.request("POST", "/v1/completions", {"model": "gpt-4", "prompt": "x"}, auth), 404, "model"),
            ]
            for name, response, status, param in cases:
                got_status, error = error_of(response)
                self.assertEqual(got_status, status, name)
                self.assertEqual(error["param"], param, name)
                # OpenAI's format: `code` is a string naming the error, or null; never the status.
                code = "invalid_api_key" if status == 401 else "model_not_found" if param == "model" else None
                self.assertEqual(error["code"], code, name)
                self.assertTrue(error["message"], name)
                report_fault(name, got_status, error)
            results = [f.result() for f in good]
        for r in results:
            ref = self.refs[r["n"]][STORY_PROMPTS.index(r["prompt"])]
            self.assertEqual(r["text"], ref["text"])

    def test_seeds_take_the_whole_unsigned_64_bit_range_as_on_the_cli(self):
        sample = lambda seed: self.client.completions.create(model="stories260K", prompt="Once upon a time", max_tokens=16,
                                                             temperature=1.0, seed=seed).choices[0].text
        for seed in (0, 2**63, 2**64 - 1):
            self.assertEqual(sample(seed), sample(seed))


def open_stream(port, path, body, key):
    """A streaming request on a raw socket, its response left unread (close the socket to leave)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    payload = json.dumps(body).encode()
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".encode()
                 + f"Authorization: Bearer {key}\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
    return sock


def open_stream_and_disconnect_authorized(port, body, key, read_bytes=400):
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    payload = json.dumps(body).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 + f"Authorization: Bearer {key}\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
    received = b""
    while len(received) < read_bytes:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    sock.close()
    return received


def raw_request(port, head, timeout=10):
    """Sends `head` (request line and headers, bytes) on a new connection: (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        return read_response(sock)


def read_response(sock):
    """One HTTP/1.1 response with a Content-Length body: (status, {lower-case header: value}, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before a response: {data!r}")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body


def read_until_close(sock, timeout=10):
    """Everything the server sends on `sock` until it closes the connection (bounded by `timeout`)."""
    data, deadline = b"", time.time() + timeout
    sock.settimeout(timeout)
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        data += chunk
    return data


def smuggled(port, head, body_and_next):
    """The responses to `head` + `body_and_next`, where the second part hides a GET /metrics."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body_and_next)
        return read_until_close(sock)


class HttpTransport(unittest.TestCase):
    """The HTTP layer on its own, on stories260K with 2 HTTP threads (so starving them is easy)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.server = Server(stories_config(cls.tmp.name), "--http-threads", "2")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.tmp.cleanup()

    def test_a_chunked_body_over_the_limit_is_refused_while_it_arrives(self):
        """httplib checked its limit against Content-Length only: a chunked body was read whole
        (then parsed and tokenized). It must be refused once it passes 32 MiB, mid-upload."""
        limit, piece = 32 << 20, b"a" * (1 << 20)
        start = time.time()
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            sent = 0
            try:
                # Up to twice the limit, stopping as soon as the server answers.
                while sent < 2 * limit and not select.select([sock], [], [], 0)[0]:
                    sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
                    sent += len(piece)
            except OSError:
                pass  # the server stopped reading: its answer is waiting
            status, headers, body = read_response(sock)
        self.assertEqual(status, 413, body[:200])
        self.assertIn("larger than the server's limit", json.loads(body)["error"]["message"])
        self.assertEqual(headers.get("connection"), "close")
        self.assertLess(sent, 2 * limit, "the whole upload was read before the answer")
        report_fault(f"chunked body over the limit ({sent >> 20} MiB sent in {time.time() - start:.1f} s)", status,
                     json.loads(body)["error"])
        # A Content-Length over the limit is refused before any of the body is read.
        start = time.time()
        status, _, body = raw_request(self.server.port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                      b"Content-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n{")
        self.assertEqual(status, 413, body[:200])
        self.assertLess(time.time() - start, 2.0)
        self.assertEqual(self.server.request("GET", "/health")[0], 200)

    def test_chunk_framing_counts_against_the_limit(self):
        """httplib reads a chunk's size line (and extensions, trailers) with a line reader that
        grows without limit, outside the body's size check: a `1;aaaa...` line with no end took
        memory without bound. The request's read budget (head + body limit + 1 MiB) ends it."""
        limit, piece = 32 << 20, b"a" * (1 << 20)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=20) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n1;")
            sent = 0
            try:
                while sent < 2 * limit and not select.select([sock], [], [], 0)[0]:
                    sock.sendall(piece)
                    sent += len(piece)
            except OSError:
                pass  # the server stopped reading: its answer is waiting
            status, headers, body = read_response(sock)
        self.assertLess(sent, 2 * limit, "the whole chunk line was read")
        self.assertEqual(status, 413, body[:200])
        self.assertEqual(headers.get("connection"), "close")
        report_fault(f"an endless chunk-size line ({sent >> 20} MiB sent)", status, json.loads(body)["error"])

    def test_a_chunked_body_closes_the_connection_so_bad_framing_smuggles_nothing(self):
        """httplib's chunked reader takes a chunk without its CRLF as the end of the body; what
        followed was served as the next request."""
        head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        replies = smuggled(self.server.port, head, b"2\r\n{}XX\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(replies.count(b"HTTP/1.1 "), 1, replies[:400])
        self.assertNotIn(b"drift_", replies)

    def test_transfer_encoding_other_than_chunked_or_with_content_length_is_refused(self):
        """RFC 9112: Transfer-Encoding with Content-Length is 400 (and the connection closed); an
        encoding other than chunked is 501 at once (httplib read such a body until the close)."""
        base = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        for extra, expected in ((b"Transfer-Encoding: chunked\r\nContent-Length: 2\r\n", 400),
                                (b"Transfer-Encoding: gzip, chunked\r\n", 501), (b"Transfer-Encoding: gzip\r\n", 501),
                                (b"Content-Length: 2\r\nContent-Length: 3\r\n", 400)):
            start = time.time()
            with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as sock:
                sock.sendall(base + extra + b"\r\n{}")
                status, headers, body = read_response(sock)
            self.assertEqual((status, headers.get("connection")), (expected, "close"), extra)
            self.assertLess(time.time() - start, 2.0, extra)
            report_fault(extra.decode().strip().replace("\r\n", ", "), status, json.loads(body)["error"])

    def test_httplibs_early_errors_close_the_connection(self):
        """httplib answers a bad request line (400) or Range (416) before routing, leaving the
        body unread and the connection open: the body was then served as the next request."""
        hidden = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        for head in (b"POST /v1/completions HTTP/1.7\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(hidden),
                     b"GET /health HTTP/1.1\r\nHost: x\r\nRange: bytes=oops\r\nContent-Length: %d\r\n\r\n" % len(hidden)):
            replies = smuggled(self.server.port, head, hidden)
            self.assertEqual(replies.count(b"HTTP/1.1 "), 1, replies[:400])
            self.assertNotIn(b"drift_", replies, head)
            self.assertIn(b"Connection: close", replies.split(b"\r\n\r\n")[0], head)

    def test_a_wrong_method_is_405_naming_the_allowed_one(self):
        for method, path, allowed in (("GET", "/v1/completions", "POST"), ("DELETE", "/v1/chat/completions", "POST"),
                                      ("POST", "/health", "GET"), ("PUT", "/v1/models", "GET")):
            conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
            conn.request(method, path, body=None if method in ("GET", "DELETE") else "{}",
                         headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            error = json.loads(response.read())["error"]
            conn.close()
            self.assertEqual((response.status, response.getheader("Allow")), (405, allowed), f"{method} {path}")
            self.assertEqual((error["type"], error["param"], error["code"]), ("invalid_request_error", None, None))
            self.assertIn(method, error["message"])
            report_fault(f"{method} {path}", response.status, error)
        self.assertEqual(error_of(self.server.request("GET", "/v1/nothing"))[0], 404)

    def test_a_body_that_is_not_json_is_415_naming_content_type(self):
        body = {"prompt": "Once upon a time", "max_tokens": 2}
        for content_type in ("text/plain", "application/x-www-form-urlencoded", ""):
            status, error = error_of(self.server.request("POST", "/v1/completions", body, {"Content-Type": content_type}))
            self.assertEqual(status, 415, content_type)
            self.assertIn("Content-Type", error["message"])
            self.assertEqual((error["type"], error["code"]), ("invalid_request_error", None))
            report_fault(f"Content-Type: {content_type!r}", status, error)
        for content_type in ("application/json; charset=utf-8", "Application/JSON"):
            status, reply = self.server.request("POST", "/v1/completions", body, {"Content-Type": content_type})
            self.assertEqual(status, 200, f"{content_type}: {reply}")

    def test_keep_alive_connections_are_reused_past_5_requests(self):
        """httplib closed every connection after 5 requests (keep_alive_max_count); http.client
        then silently reconnects, from a new local port."""
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=60)
        ports = []
        try:
            for i in range(12):
                if i % 3 == 2:
                    conn.request("POST", "/v1/completions", body=json.dumps({"prompt": "Once upon a time", "max_tokens": 2}),
                                 headers={"Content-Type": "application/json"})
                else:
                    conn.request("GET", "/health")
                ports.append(conn.sock.getsockname()[1])
                response = conn.getresponse()
                response.read()
                self.assertEqual(response.status, 200)
                self.assertNotEqual((response.getheader("Connection") or "").lower(), "close", f"request {i + 1}")
        finally:
            conn.close()
        self.assertEqual(len(set(ports)), 1, f"reconnected: local ports {ports}")

    def test_slow_header_clients_do_not_delay_health(self):
        """Slowloris: more connections than HTTP threads, each sending its headers a byte every
        0.5 s. Each used to hold an HTTP thread (every read is quick, so httplib's 5 s read
        timeout never fires) and /health waited for one to give up."""
        slow = [socket.create_connection(("127.0.0.1", self.server.port), timeout=10) for _ in range(6)]
        stop = threading.Event()

        def trickle():
            for sock in slow:
                sock.sendall(b"GET /health HTTP/1.1\r\n")
            for _ in range(12):  # 6 s at most
                if stop.wait(0.5):
                    return
                for sock in slow:
                    sock.sendall(b"X")
        sender = threading.Thread(target=trickle)
        sender.start()
        try:
            time.sleep(1.0)  # every slow connection has begun its headers
            for path in ("/health", "/v1/models"):
                start = time.time()
                status, _, _ = raw_request(self.server.port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
                                           timeout=10)
                elapsed = time.time() - start
                self.assertEqual(status, 200)
                self.assertLess(elapsed, 1.0, f"{path} took {elapsed:.2f} s behind 6 slow-header connections")
            status, reply = self.server.request("POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 2})
            self.assertEqual(status, 200, reply)
        finally:
            stop.set()
            sender.join()
            for sock in slow:
                sock.close()
        report_fault("6 slow-header connections, 2 HTTP threads", "/health in time", {})


class QueueAndShutdown(unittest.TestCase):
    """SmolLM2 (about 20 ms a token on the CPU), so that requests stay in flight for seconds."""

    def test_queue_overflow_is_429_then_sigterm_finishes_in_flight_work_and_exits_0(self):
        config = smollm2_config()
        prompt, n = "Once upon a time", 100
        ref = generate(config, [prompt], n, ignore_eos=True)[0]
        server = Server(config, "--max-requests", "2")
        try:
            client = server.client()
            long_request = lambda: stream_text(client.completions.create(
                model="smollm2-135m-instruct", prompt=prompt, max_tokens=n, temperature=0, stream=True,
                extra_body={"ignore_eos": True}))
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                running = [pool.submit(long_request) for _ in range(2)]
                self.assertTrue(wait_until(lambda: metric(server.metrics(), "drift_requests_running") == 2))
                with self.assertRaises(openai.RateLimitError) as caught:
                    client.completions.create(model="smollm2-135m-instruct", prompt="Hi", max_tokens=4)
                self.assertEqual(caught.exception.status_code, 429)
                self.assertEqual(caught.exception.code, "rate_limit_exceeded")
                report_fault("queue overflow (--max-requests 2, third request)", 429, caught.exception.body)
                for f in running:
                    self.assertEqual(f.result()[0], ref["text"])
            # Shutdown: the request in flight finishes; new ones are refused (503); exit code 0.
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                in_flight = pool.submit(long_request)
                self.assertTrue(wait_until(lambda: metric(server.metrics(), "drift_requests_running") == 1))
                server.proc.send_signal(signal.SIGTERM)
                self.assertTrue(wait_until(lambda: server.request("GET", "/health")[0] == 503, timeout=10))
                status, error = error_of(server.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2}))
                self.assertEqual(status, 503)
                report_fault("request during shutdown (SIGTERM)", status, error)
                self.assertEqual(in_flight.result()[0], ref["text"])
            server.stop(timeout=60)
        finally:
            if server.proc.poll() is None:
                server.proc.kill()


LOAD_REPORT = []


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))] if values else float("nan")


def report_load(results, wall):
    ttft = [(r["stamps"][0] - r["start"]) * 1000 for r in results if r["stamps"]]
    gaps = [(b - a) * 1000 for r in results for a, b in zip(r["stamps"], r["stamps"][1:])]
    tokens = sum(r["usage"].completion_tokens for r in results)
    LOAD_REPORT.append(f"load: {len(results)} streaming clients, {tokens} tokens in {wall:.2f} s = {tokens / wall:.1f} tokens/s; "
                       f"TTFT ms p50 {percentile(ttft, .5):.1f} p90 {percentile(ttft, .9):.1f} p99 {percentile(ttft, .99):.1f}; "
                       f"inter-chunk ms p50 {percentile(gaps, .5):.1f} p90 {percentile(gaps, .9):.1f} p99 {percentile(gaps, .99):.1f}")


def report_fault(name, status, error):
    error = error if isinstance(error, dict) else {}
    LOAD_REPORT.append(f"fault: {name}: {status} param={error.get('param')} {str(error.get('message', ''))[:100]}")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--drift", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--default-data", default="", help="the build's DRIFT_TEST_DATA (the environment's wins)")
    parser.add_argument("--sanitized", action="store_true", help="drift is an ASan/UBSan build: skip the SmolLM2 classes")
    ARGS, rest = parser.parse_known_args()
    program = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    for line in LOAD_REPORT:
        print(line)
    sys.exit(0 if program.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
