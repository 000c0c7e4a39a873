#!/usr/bin/env python3
"""Rewrites a GGUF with every tensor dequantized to F32 (metadata copied; general.file_type = ALL_F32).

The weights are then exactly those of models/smollm2-135m-instruct (scripts/fetch_model.py
dequantizes with the same gguf.quants.dequantize), so llama.cpp running this file computes the
same model as DriftEngine's fp32 checkpoint. Needs numpy and gguf-py (llama.cpp's gguf-py folder on
PYTHONPATH, or the `gguf` package).

  gguf_to_f32.py SmolLM2-135M-Instruct.Q4_1.gguf smollm2-135m-instruct-f32.gguf
"""
import sys

import gguf
import numpy as np
from gguf.quants import dequantize


def main():
    src, dst = sys.argv[1], sys.argv[2]
    reader = gguf.GGUFReader(src)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(dst, arch=arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter itself
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if field.name == gguf.Keys.General.FILE_TYPE:
            value = int(gguf.LlamaFileType.ALL_F32)
        writer.add_key_value(field.name, value, vtype, sub_type=sub_type)
    for t in reader.tensors:
        values = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        # GGUF lists dimensions fastest first; numpy wants them slowest first.
        values = values.reshape(tuple(int(d) for d in reversed(t.shape)))
        writer.add_tensor(t.name, values, raw_dtype=gguf.GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
