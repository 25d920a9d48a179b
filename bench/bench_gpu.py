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

--qat torch_ao times quantization-aware training instead, as bench_train.py --qat torch_ao does on
the CPU: qgrad's default torch_ao recipe (bench_train --qat torch_ao: PyTorch 1.13's
get_default_qat_qconfig("fbgemm"), FusedMovingAvgObsFakeQuantize on the input and the
per-channel weight of every Conv2d and Linear) against PyTorch eager QAT prepared the same way
(bench_train.py's "matched" recipe), and each framework's float step too, in the same
alternation: the table adds QAT/float, each one's step cost ratio (float images/s / QAT
images/s; 1.05 = QAT steps take 5% longer).

Usage: python3 bench/bench_gpu.py [--build build] [--models lenet5bn,vggfm,resnet20] [--batches 128,512]
                                  [--rounds 3] [--steps 50] [--warmup 10] [--device cuda]
                                  [--qat torch_ao]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def torch_worker(model_name, batch, steps, warmup, device, qat=None):
    import warnings
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_train import torch_training_step
    warnings.filterwarnings("ignore", message="Please use quant_min and quant_max")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    dev = torch.device(device)
    step = torch_training_step(model_name, batch, dev, qat=qat)
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
    ap.add_argument("--qat", choices=["torch_ao"], help="time QAT against PyTorch eager QAT")
    ap.add_argument("--torch-worker", nargs=3, metavar=("MODEL", "BATCH", "STEPS"))
    ap.add_argument("--worker-qat", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_worker:
        m, b, s = a.torch_worker
        torch_worker(m, int(b), int(s), a.warmup, a.device, "matched" if a.worker_qat else None)
        return
    binary = os.path.join(a.build, "bench", "bench_train")
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench_gpu: {binary} not found: build qgrad with CUDA first")
    import torch
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}; "
          f"{a.rounds} rounds of {a.steps} steps after {a.warmup} warm-up steps, alternating")
    if a.qat:
        return qat_main(a, binary)
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


def qat_main(a, binary):
    """Four processes per round and model: qgrad float, PyTorch float, qgrad QAT, PyTorch QAT."""
    def qgrad_cmd(model, batch, qat):
        return [binary, model, "--batch", batch, "--steps", str(a.steps), "--warmup",
                str(a.warmup), "--device", a.device] + (["--qat", a.qat] if qat else [])

    def torch_cmd(model, batch, qat):
        return [sys.executable, os.path.abspath(__file__), "--torch-worker", model, batch,
                str(a.steps), "--warmup", str(a.warmup), "--device", a.device] + \
               (["--worker-qat"] if qat else [])

    print(f"QAT {a.qat}: qgrad's default recipe vs PyTorch eager prepare_qat (matched recipe)")
    print(f"{'model':10} {'batch':>5} {'qgrad QAT':>10} {'torch QAT':>10} {'ratio':>6} "
          f"{'(median)':>8} {'qgrad QAT/float':>15} {'torch QAT/float':>15} {'qgrad MiB':>10} "
          f"{'torch MiB':>10}")
    for model in a.models.split(","):
        for batch in a.batches.split(","):
            runs = {k: [] for k in ("qf", "tf", "qq", "tq")}
            for _ in range(a.rounds):
                runs["qf"].append(run(qgrad_cmd(model, batch, False)))
                runs["tf"].append(run(torch_cmd(model, batch, False)))
                runs["qq"].append(run(qgrad_cmd(model, batch, True)))
                runs["tq"].append(run(torch_cmd(model, batch, True)))
            best = {k: max(x[0] for x in v) for k, v in runs.items()}
            med = {k: statistics.median(x[0] for x in v) for k, v in runs.items()}
            print(f"{model:10} {batch:>5} {best['qq']:10.0f} {best['tq']:10.0f} "
                  f"{best['qq'] / best['tq']:6.2f} {med['qq'] / med['tq']:8.2f} "
                  f"{best['qf'] / best['qq']:15.3f} {best['tf'] / best['tq']:15.3f} "
                  f"{max(x[1] for x in runs['qq']):10.1f} {max(x[1] for x in runs['tq']):10.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
