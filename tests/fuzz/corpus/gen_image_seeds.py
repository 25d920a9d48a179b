#!/usr/bin/python3
"""Writes the seed files of fuzz_image, tests/fuzz/corpus/image/seed_*: small JPEGs (baseline,
progressive, grey, 4:2:0 and 4:4:4, restart markers) and PNGs (every colour type, 1- to 16-bit,
palette), a truncated one of each, with PIL (Debian's python3-pil; gen_seeds.py, the
other targets' writer, keeps to the standard library). Re-runnable; rewrites only seed_* files."""
import io
import os

import numpy as np
from PIL import Image

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "image")


def put(name, data):
    os.makedirs(OUT, exist_ok=True)
    assert len(data) < 16 * 1024
    with open(os.path.join(OUT, "seed_" + name), "wb") as f:
        f.write(data)


def encode(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, fmt, **kw)
    return b.getvalue()


def main():
    rng = np.random.default_rng(0)
    rgb = Image.fromarray(rng.integers(0, 256, size=(12, 17, 3), dtype=np.uint8), "RGB")
    grey = rgb.convert("L")
    jpegs = {
        "baseline.jpg": encode(rgb, "JPEG", quality=80),
        "progressive.jpg": encode(rgb, "JPEG", quality=80, progressive=True),
        "grey.jpg": encode(grey, "JPEG", quality=80),
        "444.jpg": encode(rgb, "JPEG", quality=90, subsampling=0),
        "restart.jpg": encode(rgb, "JPEG", quality=70, restart_marker_blocks=1),
    }
    pngs = {
        "rgb.png": encode(rgb, "PNG"),
        "grey.png": encode(grey, "PNG"),
        "rgba.png": encode(rgb.convert("RGBA"), "PNG"),
        "la.png": encode(grey.convert("LA"), "PNG"),
        "palette.png": encode(rgb.convert("P"), "PNG"),
        "bits1.png": encode(grey.convert("1"), "PNG"),
        "grey16.png": encode(Image.fromarray(
            rng.integers(0, 65536, size=(5, 7), dtype=np.uint16)), "PNG"),
    }
    for name, data in {**jpegs, **pngs}.items():
        put(name, data)
    put("truncated.jpg", jpegs["baseline.jpg"][: len(jpegs["baseline.jpg"]) // 2])
    put("truncated.png", pngs["rgb.png"][: len(pngs["rgb.png"]) // 2])


if __name__ == "__main__":
    main()
