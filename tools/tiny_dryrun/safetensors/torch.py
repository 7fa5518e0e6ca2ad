"""safetensors.torch's save_file / load_file / load for tools/tiny_dryrun (bf16, f32, u8, i64; little-endian)."""
import json
import struct

import torch

_DTYPES = {torch.bfloat16: "BF16", torch.float32: "F32", torch.uint8: "U8", torch.int64: "I64"}
_BACK = {v: k for k, v in _DTYPES.items()}
_SIZE = {"BF16": 2, "F32": 4, "U8": 1, "I64": 8}


def save_file(tensors, path, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].contiguous().cpu()
        raw = t.view(torch.uint8).numpy().tobytes() if t.dtype != torch.uint8 else t.numpy().tobytes()
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for raw in blobs:
            f.write(raw)


def load(data):
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        raw = bytearray(data[8 + n + a:8 + n + b])
        flat = torch.frombuffer(raw, dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        out[name] = flat.view(_BACK[h["dtype"]]).reshape(h["shape"]).clone()
    return out


def load_file(path):
    return load(open(path, "rb").read())
