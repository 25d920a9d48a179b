#!/usr/bin/python3
"""conv2d forward + backward: qgrad (bench/bench_conv.cpp) vs PyTorch 1.13 in the same run.

Layers of the VGG-ish Fashion-MNIST CNN, kernel 3, padding 1, batch 128: Conv(1->32) and
Conv(32->32) at 28x28, Conv(32->64) and Conv(64->64) at 14x14. A step is forward, then backward
of a fixed upstream gradient (input gradient for all but the first layer, whose input is the
data; weight and bias gradients always). The two frameworks run alternately for --rounds rounds
(the machine is shared, so the per-layer minimum over rounds of each side's median is reported),
on the same number of threads.

    /usr/bin/python3 bench/bench_conv.py --qgrad build/bench_conv [--threads 2] [--rounds 3]
"""
import argparse
import subprocess
import time

import torch

LAYERS = [(1, 32, 28), (32, 32, 28), (32, 64, 14), (64, 64, 14)]


def name(c, o, hw):
    return f"{c}->{o}@{hw}"


def torch_round(batch, iters, warmup):
    out = {}
    torch.manual_seed(0)
    for c, o, hw in LAYERS:
        conv = torch.nn.Conv2d(c, o, 3, padding=1)
        x = torch.randn(batch, c, hw, hw, requires_grad=(c != 1))
        gy = torch.randn(batch, o, hw, hw)

        def step():
            y = conv(x)
            y.backward(gy)
            conv.weight.grad = None
            conv.bias.grad = None
            x.grad = None

        def fwd():
            with torch.no_grad():
                conv(x)

        for _ in range(warmup):
            step()
            fwd()
        ts, tf = [], []
        for _ in range(iters):
            t0 = time.perf_counter()
            step()
            ts.append((time.perf_counter() - t0) * 1e3)
        for _ in range(iters):
            t0 = time.perf_counter()
            fwd()
            tf.append((time.perf_counter() - t0) * 1e3)
        ts.sort()
        tf.sort()
        out[name(c, o, hw)] = (ts[len(ts) // 2], tf[len(tf) // 2])
    return out


def qgrad_round(binary, threads, batch, iters, warmup):
    res = subprocess.run([binary, "--threads", str(threads), "--batch", str(batch), "--iters",
                          str(iters), "--warmup", str(warmup)], check=True, capture_output=True,
                         text=True)
    out = {}
    for line in res.stdout.splitlines():
        if line.startswith("#") or line.startswith("layer"):
            continue
        f = line.split()
        out[f[0]] = (float(f[1]), float(f[3]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qgrad", required=True, help="path of the bench_conv binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    best_t, best_q = {}, {}
    for _ in range(a.rounds):
        for side, res in (("torch", torch_round(a.batch, a.iters, a.warmup)),
                          ("qgrad", qgrad_round(a.qgrad, a.threads, a.batch, a.iters, a.warmup))):
            best = best_t if side == "torch" else best_q
            for k, (s, f) in res.items():
                ps, pf = best.get(k, (float("inf"), float("inf")))
                best[k] = (min(ps, s), min(pf, f))
    print(f"conv2d k3 p1, batch {a.batch}, {a.threads} threads, best of {a.rounds} rounds "
          f"(median of {a.iters} each), ms; ratio = torch / qgrad (> 1: qgrad faster)")
    print(f"{'layer':<14}{'torch step':>12}{'qgrad step':>12}{'ratio':>8}"
          f"{'torch fwd':>12}{'qgrad fwd':>12}{'ratio':>8}")
    tot = [0.0, 0.0, 0.0, 0.0]
    for c, o, hw in LAYERS:
        k = name(c, o, hw)
        ts, tf = best_t[k]
        qs, qf = best_q[k]
        tot = [tot[0] + ts, tot[1] + qs, tot[2] + tf, tot[3] + qf]
        print(f"{k:<14}{ts:12.2f}{qs:12.2f}{ts / qs:8.2f}{tf:12.2f}{qf:12.2f}{tf / qf:8.2f}")
    print(f"{'total':<14}{tot[0]:12.2f}{tot[1]:12.2f}{tot[0] / tot[1]:8.2f}"
          f"{tot[2]:12.2f}{tot[3]:12.2f}{tot[2] / tot[3]:8.2f}")


if __name__ == "__main__":
    main()
