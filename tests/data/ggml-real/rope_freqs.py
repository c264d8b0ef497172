#!/usr/bin/python3
"""Llama-3.1's `rope_freqs` as convert_hf_to_gguf.py computes them (PyTorch fp32), written as raw
float32 for driver.c: the same code as tests/corpus/ggml_rope.py's llama3_rope_freqs."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "corpus"))
from ggml_rope import llama3_rope_freqs  # noqa: E402

LLAMA31 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
llama3_rope_freqs(128, 500000.0, LLAMA31).astype("<f4").tofile(sys.argv[1])
