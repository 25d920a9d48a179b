#!/usr/bin/python3
"""qgrad's quantizer families against PyTorch 1.13 on the CPU, in one run and one table.

Runs build/bench/bench_quant_families (bench/bench_quant_families.cpp: torch.ao, NVIDIA, Horizon
and AIMET fake quantization through qgrad's public APIs) and measures the same workload in PyTorch:
torch.fake_quantize_per_tensor_affine / per_channel_affine (forward, forward + backward),
torch._fake_quantize_learnable_per_tensor_affine (LSQ), torch.fused_moving_avg_obs_fake_quant
(torch.ao's fused observer + fake quantization, the op of FusedMovingAvgObsFakeQuantize: per tensor
quint8 [0, 255] affine, and per channel qint8 [-128, 127] symmetric along axis 0, observer and fake
quantization on, running statistics carried between repetitions), x.clone() and y.copy_(x), on
16M float32 values (shape [256, 64, 1024], per channel along axis 1 except the fused op's axis 0)
with the same thread count.

The machine may be shared, so both sides run --rounds times, alternating (C++ program, then
PyTorch); each round reports the median of --reps repetitions, and the table shows the median over
rounds. GB/s counts read + written bytes: forward 8 bytes/element, forward + backward 16.

Columns: qgrad time and GB/s; "/copy": qgrad GB/s relative to qgrad's own x.clone() (the same
allocation of a fresh output); the PyTorch op the row is compared with (fq_tensor / fq_channel:
torch.fake_quantize_per_{tensor,channel}_affine in the same direction, lfq_tensor: the learnable
per-tensor form, fused_tensor / fused_channel: torch.fused_moving_avg_obs_fake_quant per tensor /
per channel) and its time; "speed-up": PyTorch time / qgrad time (> 1: qgrad is faster).

Run from the repository root after building:
    /usr/bin/python3 bench/bench_quant_families.py [--threads 2] [--rounds 5] [--reps 9]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINE = re.compile(r"^(.*?)\s+([0-9.]+) ms\s+([0-9.]+) GB/s$")

# qgrad row -> the PyTorch measurement it is compared with.
REFERENCE = {
    "copy x.clone()": "clone",
    "copy y.copy_(x)": "copy_",
    "torch.ao learnable per-tensor fwd+bwd": "lfq_tensor fwd+bwd",
    "aimet range-learning per-tensor fwd+bwd": "lfq_tensor fwd+bwd",
}


def reference_for(name):
    if name in REFERENCE:
        return REFERENCE[name]
    kind = "fq_tensor" if "per-tensor" in name else "fq_channel"
    if "fused obs+fq" in name:
        kind = "fused_tensor" if "per-tensor" in name else "fused_channel"
    return kind + (" fwd+bwd" if name.endswith("fwd+bwd") else " fwd")


def run_cpp(binary, threads, reps):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([binary, str(threads), str(reps)], env=env, check=True,
                         capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        m = LINE.match(line.strip())
        if m:
            rows[m.group(1).strip()] = float(m.group(2)) / 1e3
    if not rows:
        sys.exit(f"no timings in the output of {binary}:\n{out}")
    return rows


def median_seconds(f, reps):
    f()  # warm-up
    ts = []
    for _ in range(reps):
        a = time.perf_counter()
        f()
        ts.append(time.perf_counter() - a)
    return statistics.median(ts)


def run_torch(reps):
    torch.manual_seed(0)
    shape = (256, 64, 1024)
    x = torch.empty(shape).uniform_(-3, 3)
    dy = torch.empty(shape).uniform_(-1, 1)
    scale_c = torch.empty(64).uniform_(0.01, 0.05)
    zp_c = torch.randint(0, 256, (64,), dtype=torch.int32)
    y = torch.empty(shape)
    xg = x.clone().requires_grad_(True)
    s = torch.tensor([0.023], requires_grad=True)
    z = torch.tensor([128.0], requires_grad=True)

    def fb(f):
        def run():
            xg.grad = None
            s.grad = None
            z.grad = None
            f(xg).backward(dy)
        return run

    fq_t = lambda v: torch.fake_quantize_per_tensor_affine(v, 0.023, 128, 0, 255)  # noqa: E731
    fq_c = lambda v: torch.fake_quantize_per_channel_affine(v, scale_c, zp_c, 1, 0, 255)  # noqa
    rows = {"clone": median_seconds(lambda: x.clone(), reps),
            "copy_": median_seconds(lambda: y.copy_(x), reps)}
    with torch.no_grad():
        rows["fq_tensor fwd"] = median_seconds(lambda: fq_t(x), reps)
        rows["fq_channel fwd"] = median_seconds(lambda: fq_c(x), reps)
    rows["fq_tensor fwd+bwd"] = median_seconds(fb(fq_t), reps)
    rows["fq_channel fwd+bwd"] = median_seconds(fb(fq_c), reps)
    on = torch.ones(1, dtype=torch.long)

    def fused(per_channel):
        if per_channel:
            state = [torch.empty(0), torch.empty(0), torch.ones(256),
                     torch.zeros(256, dtype=torch.int32)]
            state[0].resize_(256).fill_(float("inf"))
            state[1].resize_(256).fill_(float("-inf"))
            qmin, qmax = -128, 127
        else:
            state = [torch.tensor([float("inf")]), torch.tensor([float("-inf")]), torch.ones(1),
                     torch.zeros(1, dtype=torch.int32)]
            qmin, qmax = 0, 255
        return lambda v: torch.fused_moving_avg_obs_fake_quant(
            v, on, on, *state, 0.01, qmin, qmax, 0, per_channel, per_channel)

    for label, pc in (("fused_tensor", False), ("fused_channel", True)):
        op = fused(pc)
        with torch.no_grad():
            rows[label + " fwd"] = median_seconds(lambda: op(x), reps)
        rows[label + " fwd+bwd"] = median_seconds(fb(op), reps)
    rows["lfq_tensor fwd+bwd"] = median_seconds(
        fb(lambda v: torch._fake_quantize_learnable_per_tensor_affine(v, s, z, 0, 255, 1.0)), reps)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bench",
                                                     "bench_quant_families"))
    args = ap.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary} not found: build first (cmake --build build)")
    torch.set_num_threads(args.threads)

    cpp_rounds, torch_rounds = [], []
    for r in range(args.rounds):
        cpp_rounds.append(run_cpp(args.binary, args.threads, args.reps))
        torch_rounds.append(run_torch(args.reps))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    def med(rounds, key):
        return statistics.median(rd[key] for rd in rounds)

    n = 256 * 64 * 1024
    names = list(cpp_rounds[0])
    qg = {k: med(cpp_rounds, k) for k in names}
    th = {k: med(torch_rounds, k) for k in torch_rounds[0]}
    gbs = lambda name, t: (16 if name.endswith("fwd+bwd") else 8) * n / t / 1e9  # noqa: E731

    print(f"qgrad vs torch {torch.__version__}: {n} float32 values, {args.threads} threads, "
          f"median over {args.rounds} rounds of the median of {args.reps} repetitions")
    head = (f"| {'case':<40} | {'qgrad ms':>8} | {'GB/s':>6} | {'/copy':>5} | "
            f"{'torch op':<18} | {'torch ms':>8} | {'GB/s':>6} | {'speed-up':>8} |")
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    clone = gbs("copy x.clone()", qg["copy x.clone()"])
    for name in names:
        ref = reference_for(name)
        t_q, t_t = qg[name], th[ref]
        print(f"| {name:<40} | {t_q * 1e3:8.2f} | {gbs(name, t_q):6.2f} | "
              f"{gbs(name, t_q) / clone:5.2f} | {ref:<18} | {t_t * 1e3:8.2f} | "
              f"{gbs(name, t_t):6.2f} | {t_t / t_q:8.2f} |")


if __name__ == "__main__":
    main()
