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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_conv import alternate, parse_args  # noqa: E402

# (channels, size, stride)
LAYERS = [(32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (384, 14, 1),
          (576, 14, 2), (960, 7, 1)]


def main():
    a = parse_args(iters=10, warmup=2, batch=32)
    best_t, best_q = alternate(a, LAYERS, lambda layer: f"{layer[0]} {layer[0]} {layer[1]} 3 1 "
                                                        f"{layer[2]} {layer[0]}")

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
