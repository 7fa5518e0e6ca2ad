"""MXFP4 for tools/tiny_train.py: encode, decode, fake quantization (straight-through) and packing into the
published checkpoints' layout (blocks [E, out, in/32, 16] u8, low nibble = even element; e8m0 scales)."""
import torch

FP4_GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


# ---- MXFP4: blocks of 32 along the input dimension, e8m0 scale 2^ceil(log2(amax / 6)) ----

def mxfp4_encode(w_out_in):
    """[E, out, in] f32 -> (codes [E, out, in] int 0..15, exponents [E, out, in/32] int)."""
    E, O, I = w_out_in.shape
    blocks = w_out_in.reshape(E, O, I // 32, 32)
    amax = blocks.abs().amax(-1)
    exp = torch.where(amax > 0, torch.ceil(torch.log2(amax.clamp_min(1e-30) / 6.0)), torch.full_like(amax, -127))
    exp = exp.clamp(-127, 127)
    scaled = blocks / torch.exp2(exp)[..., None]
    grid = FP4_GRID.to(w_out_in.device)
    idx = (scaled.abs()[..., None] - grid).abs().argmin(-1)  # nearest magnitude (ties: the smaller)
    codes = idx + 8 * ((scaled < 0) & (idx > 0)).long()
    return codes.reshape(E, O, I), exp.long()


def mxfp4_decode(codes, exp):
    E, O, I = codes.shape
    grid = FP4_GRID.to(codes.device)
    values = grid[codes % 8] * torch.where(codes >= 8, -1.0, 1.0)
    return (values.reshape(E, O, I // 32, 32) * torch.exp2(exp.float())[..., None]).reshape(E, O, I)


def fake_quant_param(p_in_out):
    """A transformers expert parameter [E, in, out] through MXFP4 and back (same orientation)."""
    w = p_in_out.detach().float().transpose(1, 2)
    codes, exp = mxfp4_encode(w)
    return mxfp4_decode(codes, exp).transpose(1, 2)


class FakeQuant(torch.nn.Module):
    def forward(self, p):
        return p + (fake_quant_param(p).to(p.dtype) - p).detach()


def pack_mxfp4(p_in_out):
    codes, exp = mxfp4_encode(p_in_out.detach().float().transpose(1, 2).contiguous())
    E, O, I = codes.shape
    c = codes.reshape(E, O, I // 32, 16, 2).to(torch.uint8)
    blocks = c[..., 0] | (c[..., 1] << 4)
    return blocks.contiguous().cpu(), (exp + 127).to(torch.uint8).contiguous().cpu()
