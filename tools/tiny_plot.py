#!/usr/bin/env python3
"""The loss curve of tools/tiny_train.py as a PNG (docs/img/tiny-model-loss.png).

matplotlib when it is there (the curve in docs was drawn by it, on the GPU machine), else Pillow, else a
plain-Python PNG (axes, grid and curve, no text), so that a training run always brings a picture back.
Also a command, to redraw the curve of a run's metrics.json:
  python3 tools/tiny_plot.py OUT/metrics.json loss.png
"""
import json
import math
import struct
import sys
import zlib

WIDTH, HEIGHT = 700, 400


def _marks(curve):
    """(step where the experts go through MXFP4, step where the last run starts) or None each."""
    qat = next((c["step"] for c in curve if c.get("qat")), None)
    later = next((c["step"] for c in curve if "run" not in c), None) if any("run" in c for c in curve) else None
    return qat, later


def _matplotlib(curve, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot([c["step"] for c in curve], [c["loss"] for c in curve], lw=1)
    qat, later = _marks(curve)
    if qat is not None:
        ax.axvline(qat, color="gray", ls="--", lw=0.8, label="experts through MXFP4 from here")
    if later is not None:
        ax.axvline(later, color="tab:red", ls=":", lw=0.8, label="next run (continued from the export)")
    if qat is not None or later is not None:
        ax.legend()
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (nats / completion token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return "matplotlib"


class _Frame:
    """Plot-area geometry: steps on x, log10(loss) on y."""

    def __init__(self, curve):
        self.left, self.right, self.top, self.bottom = 70, WIDTH - 20, 40, HEIGHT - 50
        steps = [c["step"] for c in curve]
        logs = [math.log10(max(c["loss"], 1e-6)) for c in curve]
        self.x0, self.x1 = min(steps), max(max(steps), min(steps) + 1)
        self.y0, self.y1 = math.floor(min(logs)), math.ceil(max(logs))
        if self.y1 == self.y0:
            self.y1 += 1

    def x(self, step):
        return self.left + (step - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def y(self, loss):
        v = math.log10(max(loss, 1e-6))
        return self.bottom - (v - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)

    def x_ticks(self):
        span = self.x1 - self.x0
        top = 10 ** math.floor(math.log10(span))
        unit = next((u for u in (top, top / 2, top / 5, top / 10) if span / u >= 4), top / 10)
        unit = max(1, int(unit))
        first = math.ceil(self.x0 / unit) * unit
        return [first + i * unit for i in range(int((self.x1 - first) // unit) + 1)]


def _pillow(curve, path, title):
    from PIL import Image, ImageDraw, ImageFont
    f = _Frame(curve)
    img = Image.new("RGB", (WIDTH, HEIGHT), "white")
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    for e in range(f.y0, f.y1 + 1):
        y = f.y(10 ** e)
        d.line([(f.left, y), (f.right, y)], fill=(225, 225, 225))
        d.text((8, y - 6), f"1e{e}", fill="black", font=font)
    for s in f.x_ticks():
        d.line([(f.x(s), f.top), (f.x(s), f.bottom)], fill=(225, 225, 225))
        d.text((f.x(s) - 10, f.bottom + 6), str(s), fill="black", font=font)
    d.rectangle([f.left, f.top, f.right, f.bottom], outline="black")
    qat, later = _marks(curve)
    for step, color in ((qat, (128, 128, 128)), (later, (214, 39, 40))):
        if step is not None:
            d.line([(f.x(step), f.top), (f.x(step), f.bottom)], fill=color)
    d.line([(f.x(c["step"]), f.y(c["loss"])) for c in curve], fill=(31, 119, 180), width=1)
    d.text((f.left, 12), title, fill="black", font=font)
    d.text(((f.left + f.right) // 2 - 10, HEIGHT - 22), "step", fill="black", font=font)
    d.text((f.left + 6, f.top + 4), "training loss (nats / completion token), log scale; gray: MXFP4 from here; "
           "red: next run", fill="black", font=font)
    img.save(path)
    return "Pillow"


def _plain(curve, path, title):
    del title  # no font here
    f = _Frame(curve)
    px = bytearray(b"\xff" * (WIDTH * HEIGHT * 3))

    def dot(x, y, rgb):
        x, y = int(round(x)), int(round(y))
        if 0 <= x < WIDTH and 0 <= y < HEIGHT:
            px[(y * WIDTH + x) * 3:(y * WIDTH + x) * 3 + 3] = bytes(rgb)

    def line(x0, y0, x1, y1, rgb):
        n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
        for i in range(n + 1):
            dot(x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n, rgb)

    for e in range(f.y0, f.y1 + 1):
        line(f.left, f.y(10 ** e), f.right, f.y(10 ** e), (225, 225, 225))
    for s in f.x_ticks():
        line(f.x(s), f.top, f.x(s), f.bottom, (225, 225, 225))
    for a, b, c, d in ((f.left, f.top, f.right, f.top), (f.left, f.bottom, f.right, f.bottom),
                       (f.left, f.top, f.left, f.bottom), (f.right, f.top, f.right, f.bottom)):
        line(a, b, c, d, (0, 0, 0))
    qat, later = _marks(curve)
    for step, rgb in ((qat, (128, 128, 128)), (later, (214, 39, 40))):
        if step is not None:
            line(f.x(step), f.top, f.x(step), f.bottom, rgb)
    for p, q in zip(curve, curve[1:]):
        line(f.x(p["step"]), f.y(p["loss"]), f.x(q["step"]), f.y(q["loss"]), (31, 119, 180))
    raw = b"".join(b"\x00" + bytes(px[y * WIDTH * 3:(y + 1) * WIDTH * 3]) for y in range(HEIGHT))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as out:
        out.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0))
                  + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return "plain Python (no text: matplotlib and Pillow are missing)"


def plot(curve, path, title):
    """Draws the curve (dicts with step, loss, qat and, for earlier runs, run) into path; returns what drew it."""
    errors = []
    for draw in (_matplotlib, _pillow, _plain):
        try:
            return draw(curve, path, title)
        except Exception as error:  # noqa: BLE001 - fall back to the next drawer
            errors.append(f"{draw.__name__}: {error!r}")
    raise RuntimeError("; ".join(errors))


def main():
    metrics = json.load(open(sys.argv[1]))
    title = sys.argv[3] if len(sys.argv) > 3 else "tiny gpt-oss"
    print(plot(metrics["curve"], sys.argv[2], title))


if __name__ == "__main__":
    main()
