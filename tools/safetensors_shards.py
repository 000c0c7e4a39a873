"""Writing a checkpoint's tensors as Hugging Face does: safetensors shards of at most `shard_gb` GB
in tensor order (model-0000i-of-0000n.safetensors, a tensor larger than that in a file of its
own) and model.safetensors.index.json, or one model.safetensors when everything fits. Each tensor's
bytes repeat a block (random checkpoints for speed work), streamed: no tensor is held in memory.
Used by tools/random_checkpoint.py and tools/gptoss/random_checkpoint.py."""
import json, os, struct

BYTES = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1}


def nbytes(dtype, shape):
    n = BYTES[dtype]
    for d in shape:
        n *= d
    return n


def write_sharded(out, tensors, shard_gb):
    """tensors: {name: (dtype, shape, block)} in file order. Returns the number of files."""
    shards, current, size = [], [], 0
    for name, (dtype, shape, _) in tensors.items():
        n = nbytes(dtype, shape)
        if current and size + n > shard_gb * 1e9:
            shards.append(current)
            current, size = [], 0
        current.append(name)
        size += n
    shards.append(current)
    os.makedirs(out, exist_ok=True)
    weight_map = {}
    for s, names in enumerate(shards):
        file = "model.safetensors" if len(shards) == 1 else f"model-{s + 1:05d}-of-{len(shards):05d}.safetensors"
        header, offset = {}, 0
        for name in names:
            dtype, shape, _ = tensors[name]
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes(dtype, shape)]}
            offset += nbytes(dtype, shape)
            weight_map[name] = file
        raw = json.dumps(header, separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)
        with open(os.path.join(out, file), "wb") as f:
            f.write(struct.pack("<Q", len(raw)) + raw)
            for name in names:
                dtype, shape, block = tensors[name]
                n = nbytes(dtype, shape)
                while n > 0:
                    f.write(block[: min(n, len(block))])
                    n -= min(n, len(block))
    if len(shards) > 1:
        total = sum(nbytes(d, s) for d, s, _ in tensors.values())
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    return len(shards)
