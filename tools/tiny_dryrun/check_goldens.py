#!/usr/bin/env python3
"""Checks the dry-run stand-in model (tools/tiny_dryrun/transformers) against the transformers float32 goldens
of a checkpoint: python3 check_goldens.py MODEL_DIR GOLDEN.json LOGITS.npy (PYTHONPATH=tools/tiny_dryrun:tools)."""
import json
import os
import sys

import numpy as np
import torch

import golden_logits as gl
from transformers import AutoConfig, GptOssForCausalLM

model_dir, golden_path, logits_path = sys.argv[1:4]
config = AutoConfig.from_pretrained(model_dir)
model = GptOssForCausalLM(config).float().eval()
tensors = gl.load_tensors(os.path.join(model_dir, "model.safetensors"))
model.load_state_dict(gl.hf_state_dict(model, tensors, False, config.num_hidden_layers, 512, 64), strict=True)
golden = json.load(open(golden_path))
expected = np.load(logits_path)
cols = golden["columns"]
rows, worst = 0, 0.0
with torch.no_grad():
    for s in golden["sequences"]:
        got = model(input_ids=torch.tensor([s])).logits[0][:, cols].numpy()
        ref = expected[rows:rows + len(s)]
        rows += len(s)
        rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        agree = float(np.mean(got.argmax(-1) == ref.argmax(-1)))
        worst = max(worst, rel)
        print(f"sequence of {len(s)} tokens: relative L2 {rel:.2e}, argmax agreement {agree:.3f}")
assert rows == expected.shape[0], (rows, expected.shape)
print("stand-in vs transformers goldens: worst relative L2", f"{worst:.2e}")
sys.exit(0 if worst < 1e-3 else 1)
