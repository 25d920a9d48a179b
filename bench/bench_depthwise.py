#!/usr/bin/python3
"""Depthwise convolution: qgrad (bench/bench_conv.cpp as a server) vs PyTorch 1.13 in one run.

MobileNetV2's depthwise 3x3 convolutions (groups == channels, padding 1, with bias), at
torchvision's 224x224 sizes: 32 channels at 112x112, 96 at 112 stride 2, 144 at 56 (stride 1
and 2), 192 at 28, 384 at 14, 576 at 14 stride 2, 960 at 7. A step is forward, then backward of
a fixed upstream gradient (input, weight and bias gradients); "fwd" is an inference forward
under no_grad. Both sides run on the same threads, alternating layer by layer for --rounds
rounds, each keeping its best median (see bench_conv.py, whose PyTorch half this reuses).

    OMP_WAIT_POLICY=passive /usr/bin/python3 bench/bench_depthwise.py \\
        --qgrad build/bench/bench_conv [--threads 2] [--rounds 3] [--batch 32]
"""
import argparse
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_conv import merge, torch_layer  # noqa: E402

# (channels, size, stride)
LAYERS = [(32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (384, 14, 1),
          (576, 14, 2), (960, 7, 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qgrad", default="build/bench/bench_conv", help="path of the bench_conv binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    server = subprocess.Popen([a.qgrad, "--serve", "--threads", str(a.threads), "--batch",
                               str(a.batch)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    best_t, best_q = {}, {}
    try:
        for _ in range(a.rounds):
            for layer in LAYERS:
                c, hw, s = layer
                merge(best_t, layer, torch_layer(a.batch, c, c, hw, 3, 1, a.iters, a.warmup, s, c))
                server.stdin.write(f"{c} {c} {hw} 3 1 {a.iters} {a.warmup} {s} {c}\n")
                server.stdin.flush()
                line = server.stdout.readline()
                if not line:
                    raise RuntimeError("bench_conv server exited")
                merge(best_q, layer, tuple(float(v) for v in line.split()))
    finally:
        server.stdin.close()
        server.wait()

    print(f"depthwise conv 3x3, batch {a.batch}, {a.threads} threads, {a.rounds} rounds x "
          f"{a.iters} iterations; ms; ratio = torch / qgrad (> 1: qgrad faster)")
    cols = ["step med", "fwd med", "step cpu", "fwd cpu"]
    idx = [0, 2, 4, 5]  # of bench_conv's (step_med, step_min, fwd_med, fwd_min, step_cpu, fwd_cpu)
    print(f"{'layer':<16}" + "".join(f"{'torch ' + c:>16}{'qgrad ' + c:>16}{'ratio':>7}"
                                     for c in cols))
    tot_t, tot_q = [0.0] * len(idx), [0.0] * len(idx)
    for layer in LAYERS:
        c, hw, s = layer
        t, q = [best_t[layer][i] for i in idx], [best_q[layer][i] for i in idx]
        tot_t = [x + y for x, y in zip(tot_t, t)]
        tot_q = [x + y for x, y in zip(tot_q, q)]
        print(f"{f'dw{c}@{hw}/s{s}':<16}" + "".join(f"{t[i]:16.2f}{q[i]:16.2f}{t[i] / q[i]:7.2f}"
                                                    for i in range(len(idx))))
    print(f"{'total':<16}" + "".join(f"{tot_t[i]:16.2f}{tot_q[i]:16.2f}{tot_t[i] / tot_q[i]:7.2f}"
                                     for i in range(len(idx))))


if __name__ == "__main__":
    main()
