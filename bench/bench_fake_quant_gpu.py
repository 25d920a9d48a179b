#!/usr/bin/env python3
"""Fake quantization on one GPU, qgrad vs PyTorch, side by side in one run: the cases of
bench/bench_fake_quant_gpu.cpp (16M float32 values; per-tensor and per-channel torch.ao fake
quantization, forward and forward + backward; the fused observer + fake quant per tensor and per
channel; a device-to-device copy of the same bytes) and the same calls of PyTorch
(torch.fake_quantize_per_tensor_affine / _per_channel_affine with tensor qparams,
torch.fused_moving_avg_obs_fake_quant, torch._fake_quantize_learnable_per_tensor_affine /
_per_channel_affine, y.copy_(x)), each timed as the mean of `reps` calls
between two synchronisations after a warm-up call.

GB/s counts the bytes a minimal implementation moves: a forward reads x and writes y (8 bytes an
element, as the copy), forward + backward also reads dy and writes dx (16; the learnable cases'
parameter gradients are sums and add nothing per element). The table gives each
side's GB/s, qgrad's as a share of its own copy, and qgrad / PyTorch (> 1: qgrad faster). The
issue's aims: at least 90% of the copy and 1.5x PyTorch. Needs a CUDA build of PyTorch (not
Debian's CPU-only 1.13); the version is printed.

Usage: python3 bench/bench_fake_quant_gpu.py [--build build] [--device cuda] [--reps 50]
"""
import argparse
import os
import subprocess
import sys
import time

N = 256 * 64 * 1024
BYTES = {"copy": 8, "per_tensor_forward": 8, "per_channel_forward": 8,
         "per_tensor_forward_mask_kernel": 8, "per_tensor_forward_backward": 16,
         "per_channel_forward_backward": 16, "fused_per_tensor_forward": 8,
         "fused_per_channel_forward": 8, "fused_per_tensor_forward_backward": 16,
         "learnable_per_tensor_forward_backward": 16,
         "learnable_per_channel_forward_backward": 16}


def torch_cases(device, reps):
    import torch
    dev = torch.device(device)
    torch.manual_seed(0)
    x = torch.empty(256, 64, 1024, device=dev).uniform_(-3, 3)
    dy = torch.empty_like(x).uniform_(-1, 1)
    y = torch.empty_like(x)
    scale = torch.tensor([0.023], device=dev)
    zp = torch.tensor([128], dtype=torch.int32, device=dev)
    scale_c = torch.empty(64, device=dev).uniform_(0.01, 0.05)
    zp_c = torch.randint(0, 256, (64,), dtype=torch.int32, device=dev)

    def seconds(f):
        f()
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        for _ in range(reps):
            f()
        torch.cuda.synchronize(dev)
        return (time.perf_counter() - t0) / reps

    out = {"copy": seconds(lambda: y.copy_(x))}
    with torch.no_grad():
        out["per_tensor_forward"] = seconds(
            lambda: torch.fake_quantize_per_tensor_affine(x, scale, zp, 0, 255))
        out["per_channel_forward"] = seconds(
            lambda: torch.fake_quantize_per_channel_affine(x, scale_c, zp_c, 1, 0, 255))
    xg = x.clone().requires_grad_(True)

    def fb_tensor():
        xg.grad = None
        torch.fake_quantize_per_tensor_affine(xg, scale, zp, 0, 255).backward(dy)

    def fb_channel():
        xg.grad = None
        torch.fake_quantize_per_channel_affine(xg, scale_c, zp_c, 1, 0, 255).backward(dy)

    out["per_tensor_forward_backward"] = seconds(fb_tensor)
    out["per_channel_forward_backward"] = seconds(fb_channel)
    flag = torch.ones(1, dtype=torch.long, device=dev)
    rmin = torch.tensor(float("inf"), device=dev)
    rmax = torch.tensor(float("-inf"), device=dev)
    fs = torch.ones(1, device=dev)
    fz = torch.zeros(1, dtype=torch.int32, device=dev)
    xw = x.reshape(256, 64 * 1024)
    cmin = torch.empty(0, device=dev)
    cmax = torch.empty(0, device=dev)
    cs = torch.ones(256, device=dev)
    cz = torch.zeros(256, dtype=torch.int32, device=dev)
    with torch.no_grad():
        out["fused_per_tensor_forward"] = seconds(lambda: torch.fused_moving_avg_obs_fake_quant(
            x, flag, flag, rmin, rmax, fs, fz, 0.01, 0, 255, -1, False, False))
        out["fused_per_channel_forward"] = seconds(lambda: torch.fused_moving_avg_obs_fake_quant(
            xw, flag, flag, cmin, cmax, cs, cz, 0.01, -128, 127, 0, True, True))

    def fb_fused():
        xg.grad = None
        torch.fused_moving_avg_obs_fake_quant(
            xg, flag, flag, rmin, rmax, fs, fz, 0.01, 0, 255, -1, False, False).backward(dy)

    out["fused_per_tensor_forward_backward"] = seconds(fb_fused)
    ls = torch.tensor([0.023], device=dev, requires_grad=True)
    lz = torch.tensor([128.0], device=dev, requires_grad=True)
    lsc = scale_c.clone().requires_grad_(True)
    lzc = zp_c.float().requires_grad_(True)

    def fb_learnable_tensor():
        xg.grad = None
        torch._fake_quantize_learnable_per_tensor_affine(xg, ls, lz, 0, 255, 1.0).backward(dy)

    def fb_learnable_channel():
        xg.grad = None
        torch._fake_quantize_learnable_per_channel_affine(
            xg, lsc, lzc, 1, 0, 255, 1.0).backward(dy)

    out["learnable_per_tensor_forward_backward"] = seconds(fb_learnable_tensor)
    out["learnable_per_channel_forward_backward"] = seconds(fb_learnable_channel)
    return out, f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(dev)}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    binary = os.path.join(a.build, "bench", "bench_fake_quant_gpu")
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench_fake_quant_gpu: {binary} not found: build qgrad with CUDA first")
    lines = subprocess.run([binary, a.device, str(a.reps)], check=True, capture_output=True,
                           text=True).stdout.split("\n")
    qgrad = {k: float(v) for k, v in (ln.split() for ln in lines if ln.strip())}
    torch_t, who = torch_cases(a.device, a.reps)
    print(f"fake quantization, {N} float32 values, mean of {a.reps} calls; {who}")
    print(f"{'case':36} {'qgrad GB/s':>11} {'% of copy':>10} {'torch GB/s':>11} {'qgrad/torch':>12}")
    for case, per in BYTES.items():
        q = per * N / qgrad[case] / 1e9
        copy = 8 * N / qgrad["copy"] / 1e9
        t = per * N / torch_t[case] / 1e9 if case in torch_t else float("nan")
        print(f"{case:36} {q:11.1f} {100 * q / copy:9.1f}% {t:11.1f} {q / t:12.2f}")


if __name__ == "__main__":
    main()
