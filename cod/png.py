"""PNG images small enough to commit: a figure's colours in a palette of at most 256.

Matplotlib writes 32-bit RGBA PNGs; a plot's flat colours and their anti-aliased edges fit a
256-colour palette with no visible change, at about a third of the bytes. Figures
(`cod.plots.save`) and the images inside executed notebooks (`cod.pipeline.notebook`) go through
`compact_png`, so the committed tree stays within its size limit (tests/test_tree_size.py). An
image already in palette mode is returned as it is, so compacting twice changes nothing.
`compact_png(data, colours)` with fewer colours re-encodes any PNG, a palette one included: the
copy of a saved figure that an executed notebook shows (`cod.plots.show`).
"""

from __future__ import annotations

import io

from PIL import Image

COLOURS = 256  # the most a PNG palette holds


def compact_png(data: bytes, colours: int = COLOURS) -> bytes:
    """`data` (a PNG file's bytes) re-encoded with a palette of at most `colours` colours, no
    dithering (flat plot colours stay flat), on a white background where it was transparent."""
    image = Image.open(io.BytesIO(data))
    if image.mode == "P" and colours == COLOURS:
        return data
    if image.mode in ("RGBA", "LA"):
        white = Image.new("RGBA", image.size, "white")
        image = Image.alpha_composite(white, image.convert("RGBA"))
    palette = image.convert("RGB").quantize(colours, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()
