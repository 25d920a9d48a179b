#!/usr/bin/python3
"""PyTorch reference timings for bench/bench_fake_quant.cpp: torch.fake_quantize_per_tensor_affine
and torch.fake_quantize_per_channel_affine (forward, forward + backward) and x.clone() on 16M
float32 values with torch.set_num_threads(2). Same GB/s convention as the C++ benchmark (forward 8
bytes/element, forward + backward 16). Run: /usr/bin/python3 bench/bench_fake_quant.py [threads]
"""
import sys
import time

import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 15
torch.set_num_threads(threads)
torch.manual_seed(0)
shape = (256, 64, 1024)
n = 256 * 64 * 1024
x = torch.empty(shape).uniform_(-3, 3)
dy = torch.empty(shape).uniform_(-1, 1)
scale_c = torch.empty(64).uniform_(0.01, 0.05)
zp_c = torch.randint(0, 256, (64,), dtype=torch.int32)


def median(f):
    f()
    ts = []
    for _ in range(reps):
        a = time.perf_counter()
        f()
        ts.append(time.perf_counter() - a)
    ts.sort()
    return ts[len(ts) // 2]


def report(name, t, nbytes):
    print(f"{name:<44s} {t * 1e3:8.2f} ms {nbytes / t / 1e9:8.2f} GB/s")


print(f"torch {torch.__version__} fake quantization, {n} float32 values, {threads} threads, "
      f"median of {reps}")
report("copy x.clone()", median(lambda: x.clone()), 8 * n)
with torch.no_grad():
    report("per-tensor forward",
           median(lambda: torch.fake_quantize_per_tensor_affine(x, 0.023, 128, 0, 255)), 8 * n)
    report("per-channel forward",
           median(lambda: torch.fake_quantize_per_channel_affine(x, scale_c, zp_c, 1, 0, 255)),
           8 * n)
xg = x.clone().requires_grad_(True)


def fb_tensor():
    xg.grad = None
    torch.fake_quantize_per_tensor_affine(xg, 0.023, 128, 0, 255).backward(dy)


def fb_channel():
    xg.grad = None
    torch.fake_quantize_per_channel_affine(xg, scale_c, zp_c, 1, 0, 255).backward(dy)


s = torch.tensor([0.023], requires_grad=True)
z = torch.tensor([128.0], requires_grad=True)


def fb_learnable():
    xg.grad = None
    s.grad = None
    z.grad = None
    torch._fake_quantize_learnable_per_tensor_affine(xg, s, z, 0, 255, 1.0).backward(dy)


report("per-tensor forward + backward", median(fb_tensor), 16 * n)
report("per-channel forward + backward", median(fb_channel), 16 * n)
report("learnable per-tensor forward + backward", median(fb_learnable), 16 * n)
