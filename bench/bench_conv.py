#!/usr/bin/python3
"""conv2d forward + backward: qgrad (bench/bench_conv.cpp) vs PyTorch 1.13 in the same run.

Layers of the VGG-ish Fashion-MNIST CNN, kernel 3, padding 1, batch 128: Conv(1->32) and
Conv(32->32) at 28x28, Conv(32->64) and Conv(64->64) at 14x14. A step is forward, then backward
of a fixed upstream gradient (input gradient for all but the first layer, whose input is the
data; weight and bias gradients always); "fwd" is an inference forward under no_grad. Both run on
the same number of threads. The machine may be shared, so the two frameworks alternate layer by
layer for --rounds rounds (qgrad runs as a server process fed one layer at a time), and each
side reports its best median and its best single-iteration time over the rounds. "cpu" is the
median process CPU time of one call (all threads); on a busy machine it is the steadier figure,
when run with OMP_WAIT_POLICY=passive (waiting threads sleep rather than spin) on both sides.

    OMP_WAIT_POLICY=passive /usr/bin/python3 bench/bench_conv.py --qgrad build/bench_conv \
        [--threads 2] [--rounds 3]
"""
import argparse
import subprocess
import time

import torch

LAYERS = [(1, 32, 28), (32, 32, 28), (32, 64, 14), (64, 64, 14)]


def torch_layer(batch, c, o, hw, iters, warmup):
    torch.manual_seed(0)
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
    ts, tf, cs, cf = [], [], [], []
    for _ in range(iters):
        c0, t0 = time.process_time(), time.perf_counter()
        step()
        ts.append((time.perf_counter() - t0) * 1e3)
        cs.append((time.process_time() - c0) * 1e3)
    for _ in range(iters):
        c0, t0 = time.process_time(), time.perf_counter()
        fwd()
        tf.append((time.perf_counter() - t0) * 1e3)
        cf.append((time.process_time() - c0) * 1e3)
    for v in (ts, tf, cs, cf):
        v.sort()
    m = len(ts) // 2
    return ts[m], ts[0], tf[m], tf[0], cs[m], cf[m]


def merge(best, key, t):
    old = best.get(key, (float("inf"),) * len(t))
    best[key] = tuple(min(a, b) for a, b in zip(old, t))


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
    server = subprocess.Popen([a.qgrad, "--serve", "--threads", str(a.threads), "--batch",
                               str(a.batch)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    best_t, best_q = {}, {}
    try:
        for _ in range(a.rounds):
            for c, o, hw in LAYERS:
                merge(best_t, (c, o, hw), torch_layer(a.batch, c, o, hw, a.iters, a.warmup))
                server.stdin.write(f"{c} {o} {hw} {a.iters} {a.warmup}\n")
                server.stdin.flush()
                line = server.stdout.readline()
                if not line:
                    raise RuntimeError("bench_conv server exited")
                merge(best_q, (c, o, hw), tuple(float(v) for v in line.split()))
    finally:
        server.stdin.close()
        server.wait()

    print(f"conv2d k3 p1, batch {a.batch}, {a.threads} threads, {a.rounds} rounds x {a.iters} "
          f"iterations; ms; ratio = torch / qgrad (> 1: qgrad faster)")
    cols = ["step med", "step min", "fwd med", "fwd min", "step cpu", "fwd cpu"]
    print(f"{'layer':<12}" + "".join(f"{'torch ' + c:>16}{'qgrad ' + c:>16}{'ratio':>7}"
                                     for c in cols))
    n = len(cols)
    tot_t, tot_q = [0.0] * n, [0.0] * n
    for c, o, hw in LAYERS:
        t, q = best_t[(c, o, hw)], best_q[(c, o, hw)]
        tot_t = [x + y for x, y in zip(tot_t, t)]
        tot_q = [x + y for x, y in zip(tot_q, q)]
        print(f"{f'{c}->{o}@{hw}':<12}" + "".join(f"{t[i]:16.2f}{q[i]:16.2f}{t[i] / q[i]:7.2f}"
                                                  for i in range(n)))
    print(f"{'total':<12}" + "".join(f"{tot_t[i]:16.2f}{tot_q[i]:16.2f}{tot_t[i] / tot_q[i]:7.2f}"
                                     for i in range(n)))


if __name__ == "__main__":
    main()
