#!/usr/bin/env python3
"""Where a GPU training step spends its time, qgrad beside PyTorch: runs the training steps of
bench_gpu.py (qgrad's bench/bench_train --device cuda, and PyTorch's twin in bench_gpu.py's
--torch-worker mode) under Nsight Compute (ncu, CUDA's kernel profiler) with the one metric
gpu__time_duration, and prints per side the kernel launches and GPU time per step and the kernels
that take most of it, grouped by name. Small CNNs are launch-bound and large batches
compute-bound: the table says which, and which kernels to fuse, replace or tune. ncu serialises
the kernels and locks the clocks, so the times are for comparison between the two sides, not
throughput (bench_gpu.py measures that).

Usage: python3 bench/profile_gpu_kernels.py [--build build] [--model resnet20] [--batch 512]
                                            [--steps 2] [--top 12] [--out DIR]
--out keeps each side's ncu log and CSV there.
"""
import argparse
import collections
import csv
import io
import os
import shutil
import subprocess
import sys


def ncu_binary():
    for c in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if c and os.access(c, os.X_OK):
            return c
    sys.exit("profile_gpu_kernels: ncu (Nsight Compute) not found")


def profile(cmd, log_path):
    """Runs cmd under ncu; returns {kernel name: [launches, total ns]}."""
    subprocess.run([ncu_binary(), "--csv", "--metrics", "gpu__time_duration.sum",
                    "--print-units", "base", "--print-kernel-base", "function",
                    "--log-file", log_path] + cmd, check=True, stdout=subprocess.DEVNULL)
    with open(log_path) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    kernels = collections.defaultdict(lambda: [0, 0.0])
    for row in csv.DictReader(io.StringIO("".join(lines))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        k = kernels[row["Kernel Name"]]
        k[0] += 1
        k[1] += float(row["Metric Value"].replace(",", ""))
    return kernels


def report(side, kernels, steps, top):
    launches = sum(k[0] for k in kernels.values())
    total = sum(k[1] for k in kernels.values())
    print(f"\n{side}: {launches / steps:.0f} kernel launches and {total / steps / 1e3:.1f} us of "
          f"GPU time per step ({len(kernels)} distinct kernels)")
    print(f"  {'us/step':>9} {'share':>6} {'launches/step':>13}  kernel")
    for name, (n, ns) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {ns / steps / 1e3:9.1f} {100 * ns / total:5.1f}% {n / steps:13.1f}  {name[:110]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="resnet20")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--steps", type=int, default=2, help="profiled steps after one warm-up step")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    binary = os.path.join(a.build, "bench", "bench_train")
    if not os.access(binary, os.X_OK):
        sys.exit(f"profile_gpu_kernels: {binary} not found: build qgrad with CUDA first")
    out = a.out or os.path.join(a.build, "profile")
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    # Both sides run one warm-up step and then the measured ones; all are profiled, the per-step
    # figures divide by the total, so the warm-up's one-off kernels show as fractions.
    total_steps = a.steps + 1
    sides = {
        "qgrad": [binary, a.model, "--batch", str(a.batch), "--steps", str(a.steps), "--warmup",
                  "1", "--device", "cuda"],
        "pytorch": [sys.executable, os.path.join(here, "bench_gpu.py"), "--torch-worker", a.model,
                    str(a.batch), str(a.steps), "--warmup", "1", "--device", "cuda"],
    }
    print(f"{a.model}, batch {a.batch}: {total_steps} training steps under ncu "
          f"(gpu__time_duration; clocks locked by ncu)")
    for side, cmd in sides.items():
        tag = f"{side}_{a.model}_{a.batch}"
        report(side, profile(cmd, os.path.join(out, f"{tag}.ncu.csv")), total_steps, a.top)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
