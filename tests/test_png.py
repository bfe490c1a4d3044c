"""Committed PNGs in a palette (cod.png): smaller, the same picture, and compacting twice changes nothing."""

import io

import matplotlib
import numpy as np
from PIL import Image

from cod.png import compact_png

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)


def figure_png() -> bytes:
    fig, ax = plt.subplots(figsize=(4, 3))
    for k in range(6):
        ax.plot(np.linspace(0, 1, 50), np.sin(np.linspace(0, 6, 50) + k), label=f"line {k}")
    ax.legend()
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return out.getvalue()


def test_a_figure_shrinks_keeps_its_size_and_looks_the_same():
    raw = figure_png()
    small = compact_png(raw)
    assert len(small) < len(raw) / 2
    before, after = (np.asarray(Image.open(io.BytesIO(b)).convert("RGB"), dtype=float) for b in (raw, small))
    assert before.shape == after.shape
    assert np.abs(before - after).mean() < 1.0  # of 255: no visible change


def test_compacting_twice_changes_nothing():
    once = compact_png(figure_png())
    assert Image.open(io.BytesIO(once)).mode == "P" and compact_png(once) == once


def test_fewer_colours_re_encode_a_palette_image_smaller_and_close():
    once = compact_png(figure_png())
    fewer = compact_png(once, 64)
    image = Image.open(io.BytesIO(fewer))
    assert image.mode == "P" and len(image.getcolors()) <= 64 and len(fewer) < len(once)
    before, after = (np.asarray(Image.open(io.BytesIO(b)).convert("RGB"), dtype=float) for b in (once, fewer))
    assert np.abs(before - after).mean() < 2.0  # of 255
