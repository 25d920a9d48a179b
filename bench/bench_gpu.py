#!/usr/bin/env python3
"""GPU training throughput and memory, qgrad vs PyTorch, side by side in one run: the SGD training
steps of bench_train.py (forward, cross-entropy, backward, momentum 0.9 + weight decay 5e-4
update on synthetic 1x28x28 batches, the zoo's PyTorch twins from tests/fixtures/gen_zoo.py) on
one CUDA device, each measurement a fresh process, alternating qgrad (build/bench/bench_train
--device cuda) and PyTorch (this script in --torch-worker mode). Both time from an idle GPU to an
idle GPU (synchronize before and after), and report the peak bytes their caching allocators held
for tensors during the timed steps (qgrad: allocator_stats().peak_bytes; PyTorch:
torch.cuda.max_memory_allocated), after a reset once warmed up.

PyTorch runs in float32 with TF32 off (torch.backends.cudnn.allow_tf32 = False and
torch.backends.cuda.matmul.allow_tf32 = False), as qgrad computes (FMA math in cuDNN, pedantic
cuBLAS): the same arithmetic on both sides. Whatever PyTorch the machine has is used (a CUDA
build is needed, so not Debian's CPU-only 1.13); the version is printed.

Prints, per model and batch: images/s of each (best and median over the rounds), the ratio
qgrad / PyTorch (> 1: qgrad faster) and the peak GPU MiB of each.

Usage: python3 bench/bench_gpu.py [--build build] [--models lenet5bn,vggfm,resnet20] [--batches 128,512]
                                  [--rounds 3] [--steps 50] [--warmup 10] [--device cuda]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def torch_worker(model_name, batch, steps, warmup, device):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_train import torch_training_step
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    dev = torch.device(device)
    step = torch_training_step(model_name, batch, dev)
    for i in range(warmup):
        step(i)
    torch.cuda.synchronize(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    torch.cuda.synchronize(dev)
    s = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated(dev) / 2**20
    print(f"{model_name} {batch} {steps * batch / s:.1f} 0 {peak:.1f}", flush=True)


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    return float(out[2]), float(out[4])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--models", default="lenet5bn,vggfm,resnet20")
    ap.add_argument("--batches", default="128,512")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--torch-worker", nargs=3, metavar=("MODEL", "BATCH", "STEPS"))
    a = ap.parse_args()
    if a.torch_worker:
        m, b, s = a.torch_worker
        torch_worker(m, int(b), int(s), a.warmup, a.device)
        return
    binary = os.path.join(a.build, "bench", "bench_train")
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench_gpu: {binary} not found: build qgrad with CUDA first")
    import torch
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}; "
          f"{a.rounds} rounds of {a.steps} steps after {a.warmup} warm-up steps, alternating")
    print(f"{'model':10} {'batch':>5} {'qgrad img/s':>12} {'torch img/s':>12} {'ratio':>6} "
          f"{'(median)':>8} {'qgrad MiB':>10} {'torch MiB':>10}")
    for model in a.models.split(","):
        for batch in a.batches.split(","):
            q, t = [], []
            for _ in range(a.rounds):
                q.append(run([binary, model, "--batch", batch, "--steps", str(a.steps), "--warmup",
                              str(a.warmup), "--device", a.device]))
                t.append(run([sys.executable, os.path.abspath(__file__), "--torch-worker", model,
                              batch, str(a.steps), "--warmup", str(a.warmup), "--device",
                              a.device]))
            qb, tb = max(x[0] for x in q), max(x[0] for x in t)
            qm, tm = statistics.median(x[0] for x in q), statistics.median(x[0] for x in t)
            print(f"{model:10} {batch:>5} {qb:12.0f} {tb:12.0f} {qb / tb:6.2f} {qm / tm:8.2f} "
                  f"{max(x[1] for x in q):10.1f} {max(x[1] for x in t):10.1f}", flush=True)


if __name__ == "__main__":
    main()
