#!/usr/bin/env python3
"""Records the EAGLE-3 reference's draft logits for tests/data/eagle3/reference_logits.json.

Runs ../shared/tools/eagle3/eagle3_ref.py (the semantics plugins/eagle3 reproduces) with the
stories260K target (transformers, fp32 on the CPU) and its trained head: greedy speculative decoding
with chains of K draft tokens, as train_stories.py's `speculate`. For the first STEPS target
forwards of each prompt it keeps every draft distribution the chain was built from -- the root's
(the last extended position: the first draft token's logits) and each chain step's -- over the
draft vocabulary, plus the tokens committed. tests/plugins/eagle3_reference_test.cc holds the
plugin's draft logits (its inspection extension) against these.

Usage (PyTorch and transformers are on the GPU machine; any machine with them works):
  python3 tools/eagle3/record_reference.py SHARED_DIR OUT.json
where SHARED_DIR holds tools/eagle3/eagle3_ref.py, models/stories260K and models/stories260K-eagle3.
"""
import json
import os
import sys

import torch
import transformers as tf
from safetensors.torch import load_file

SHARED, OUT = sys.argv[1], sys.argv[2]
K, STEPS, PROMPTS = 4, 8, 4
sys.path.insert(0, os.path.join(SHARED, "tools/eagle3"))
from eagle3_ref import Eagle3Head, DraftState, target_forward  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
target_dir = os.path.join(SHARED, "models/stories260K")
head_dir = os.path.join(SHARED, "models/stories260K-eagle3")
target = tf.LlamaForCausalLM.from_pretrained(target_dir, torch_dtype=torch.float32).eval()
cfg = json.load(open(os.path.join(head_dir, "config.json")))
layers = cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
head = Eagle3Head(cfg).eval()
sd = load_file(os.path.join(head_dir, "model.safetensors"))
names = {"fc.weight": "fc.weight", "midlayer.input_layernorm.weight": "input_layernorm",
         "midlayer.hidden_norm.weight": "hidden_norm", "midlayer.self_attn.q_proj.weight": "q_proj.weight",
         "midlayer.self_attn.k_proj.weight": "k_proj.weight", "midlayer.self_attn.v_proj.weight": "v_proj.weight",
         "midlayer.self_attn.o_proj.weight": "o_proj.weight",
         "midlayer.post_attention_layernorm.weight": "post_attention_layernorm",
         "midlayer.mlp.gate_proj.weight": "gate_proj.weight", "midlayer.mlp.up_proj.weight": "up_proj.weight",
         "midlayer.mlp.down_proj.weight": "down_proj.weight", "norm.weight": "norm", "lm_head.weight": "lm_head.weight",
         "d2t": "d2t"}
head.load_state_dict({ours: sd[theirs] for theirs, ours in names.items()}, strict=True)
embed = target.model.embed_tokens


@torch.no_grad()
def chain_with_logits(state, first_token, pos):
    """eagle3_ref.chain_draft, keeping each chain step's draft logits."""
    toks, logits = [first_token], []
    h = state.last_h
    k0 = state.K.shape[0]
    for step in range(K - 1):
        q, kk, vv = head.qkv(embed(torch.tensor([toks[-1]])), h, torch.tensor([pos + step]))
        state.K = torch.cat([state.K, kk])
        state.V = torch.cat([state.V, vv])
        mask = torch.ones(1, state.K.shape[0], dtype=torch.bool)
        normed, h = head.finish(head.attend(q, state.K, state.V, mask), h)
        row = head.lm_head(normed)[0]
        logits.append(row)
        d = row.argmax().item()
        toks.append(d + head.d2t[d].item())
    state.truncate(k0)
    return toks, logits


@torch.no_grad()
def record(prompt):
    c = list(prompt)
    logits, aux = target_forward(target, torch.tensor(c), layers)
    c.append(logits[-1].argmax().item())
    st = DraftState()
    dl = st.extend(head, embed(torch.tensor(c[1:])), aux[: len(c) - 1], 0)
    steps = []
    for _ in range(STEPS):
        root = dl[-1]
        d = root.argmax().item()
        chain, chain_logits = chain_with_logits(st, d + head.d2t[d].item(), len(c) - 1)
        logits, aux = target_forward(target, torch.tensor(c + chain), layers)
        n = len(c)
        a = 0
        while a < K and chain[a] == logits[n - 1 + a].argmax().item():
            a += 1
        committed = chain[:a] + [logits[n - 1 + a].argmax().item()]
        steps.append({"draft": chain, "committed": committed,
                      "logits": [[round(float(x), 6) for x in row] for row in [root] + chain_logits]})
        dl = st.extend(head, embed(torch.tensor(committed)), aux[n - 1: n - 1 + a + 1], n - 1)
        c += committed
    return steps


golden = json.load(open(os.path.join(head_dir, "golden_speculative.json")))
prompts = golden["prompts"][:PROMPTS]
out = {"command": "python3 tools/eagle3/record_reference.py SHARED_DIR tests/data/eagle3/reference_logits.json",
       "torch": torch.__version__, "transformers": tf.__version__, "k": K,
       "semantics": "per target forward: the root's draft logits (first draft token) then each chain step's, "
                    "over the draft vocabulary; the chain drafted; the tokens committed",
       "prompts": prompts, "runs": [record(p) for p in prompts]}
with open(OUT, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print(f"wrote {OUT}: {len(prompts)} prompts x {STEPS} steps x {K} draft distributions")
