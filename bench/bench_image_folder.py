#!/usr/bin/python3
"""Loading speed of qgrad's image_folder loader (bench/bench_image_folder.cpp) against
torchvision's ImageFolder + DataLoader (PIL decoding), same transforms, workers and batch size,
side by side in one run: decoded and augmented images per second over EPOCHS epochs after the
first batch (workers started, files in the page cache).

  train: RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize(ImageNet)
  eval:  Resize(256), CenterCrop(224), ToTensor(), Normalize(ImageNet)

The images are generated here: N JPEGs of 500x375 (quality 90, smooth random content with
noise, as photos compress) in 8 class folders, in a temporary folder. Each side runs ROUNDS
times, alternating, and the best round of each is reported (the least disturbed by other work on
a shared machine).
Run: /usr/bin/python3 bench/bench_image_folder.py [--bench build/bench/bench_image_folder]
     [--workers 2] [--images 400] [--batch 32] [--epochs 2] [--rounds 3]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def make_images(root, n, classes=8, size=(500, 375)):
    rng = np.random.default_rng(0)
    w, h = size
    for i in range(n):
        d = os.path.join(root, f"class{i % classes}")
        os.makedirs(d, exist_ok=True)
        coarse = rng.uniform(0, 255, size=(h // 25, w // 25, 3)).astype(np.uint8)
        img = np.asarray(Image.fromarray(coarse).resize((w, h), Image.BICUBIC)).astype(np.int16)
        img = np.clip(img + rng.integers(-12, 13, size=img.shape), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(os.path.join(d, f"{i:05d}.jpg"), quality=90)


def torchvision_rate(root, mode, workers, batch, epochs):
    if mode == "train":
        tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                        T.Normalize(MEAN, STD)])
    else:
        tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(root, tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                                         persistent_workers=workers > 0)
    it = iter(loader)
    next(it)  # the first batch starts the clock (workers started)
    start = time.perf_counter()
    images = 0
    for e in range(epochs):
        for x, _ in it:
            images += x.shape[0]
        it = iter(loader)
    return images / (time.perf_counter() - start), images


def qgrad_rate(bench, root, mode, workers, batch, epochs):
    out = subprocess.run([bench, root, mode, str(workers), str(batch), str(epochs)],
                         check=True, capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return r["images_per_s"], r["images"]


def main():
    p = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--bench", default=os.path.join(here, "..", "build", "bench",
                                                   "bench_image_folder"))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--images", type=int, default=400)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"PIL {Image.__version__}; {a.images} JPEGs 500x375, batch {a.batch}, "
          f"{a.workers} workers, {a.epochs} epochs after the first batch, best of {a.rounds} rounds, "
          f"{os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as root:
        make_images(root, a.images)
        print(f"{'transforms':<44s} {'qgrad img/s':>12s} {'torchvision':>12s} {'ratio':>7s}")
        for mode, name in (("train", "RandomResizedCrop(224)+flip+normalize"),
                           ("eval", "Resize(256)+CenterCrop(224)+normalize")):
            q = t = 0.0
            for _ in range(a.rounds):
                q = max(q, qgrad_rate(a.bench, root, mode, a.workers, a.batch, a.epochs)[0])
                t = max(t, torchvision_rate(root, mode, a.workers, a.batch, a.epochs)[0])
            print(f"{name:<44s} {q:12.1f} {t:12.1f} {q / t:6.2f}x", flush=True)


if __name__ == "__main__":
    main()
