#!/usr/bin/python3
"""conv2d forward + backward: qgrad (bench/bench_conv.cpp) vs PyTorch 1.13 in the same run.

Layers at batch 128: the VGG-ish Fashion-MNIST CNN's, kernel 3, padding 1: Conv(1->32) and
Conv(32->32) at 28x28, Conv(32->64) and Conv(64->64) at 14x14; and LeNet-5's, kernel 5:
Conv(1->6, padding 2) at 28x28 and Conv(6->16) at 14x14. A step is forward, then backward
of a fixed upstream gradient (input gradient for all but the first layer, whose input is the
data; weight and bias gradients always); "fwd" is an inference forward under no_grad. Both run on
the same number of threads. The machine may be shared, so the two frameworks alternate layer by
layer for --rounds rounds (qgrad runs as a server process fed one layer at a time), and each
side reports its best median and its best single-iteration time over the rounds. "cpu" is the
median process CPU time of one call (all threads); on a busy machine it is the steadier figure,
when run with OMP_WAIT_POLICY=passive (waiting threads sleep rather than spin) on both sides.

    OMP_WAIT_POLICY=passive /usr/bin/python3 bench/bench_conv.py --qgrad build/bench/bench_conv \
        [--threads 2] [--rounds 3]
"""
import argparse
import subprocess
import time

import torch

# (in, out, size, kernel, padding): the VGG-ish CNN's 3x3 layers, then LeNet-5's two 5x5.
LAYERS = [(1, 32, 28, 3, 1), (32, 32, 28, 3, 1), (32, 64, 14, 3, 1), (64, 64, 14, 3, 1),
          (1, 6, 28, 5, 2), (6, 16, 14, 5, 0)]


def torch_layer(batch, c, o, hw, k, pad, iters, warmup, stride=1, groups=1):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(c, o, k, stride=stride, padding=pad, groups=groups)
    x = torch.randn(batch, c, hw, hw, requires_grad=(c != 1))
    ohw = (hw + 2 * pad - k) // stride + 1
    gy = torch.randn(batch, o, ohw, ohw)

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


def parse_args(iters, warmup, batch):
    """The options both conv benchmarks take, with these defaults."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--qgrad", default="build/bench/bench_conv",
                    help="path of the bench_conv binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=iters)
    ap.add_argument("--warmup", type=int, default=warmup)
    ap.add_argument("--batch", type=int, default=batch)
    return ap.parse_args()


def alternate(a, layers, server_args):
    """Times each layer in PyTorch and in a bench_conv server, alternating layer by layer for
    a.rounds rounds; server_args(layer) gives the server's "c o hw k pad" (+ " stride groups").
    Returns each side's best timings per layer."""
    torch.set_num_threads(a.threads)
    server = subprocess.Popen([a.qgrad, "--serve", "--threads", str(a.threads), "--batch",
                               str(a.batch)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    best_t, best_q = {}, {}
    try:
        for _ in range(a.rounds):
            for layer in layers:
                c, o, hw, k, pad, *rest = (int(v) for v in server_args(layer).split())
                merge(best_t, layer, torch_layer(a.batch, c, o, hw, k, pad, a.iters, a.warmup,
                                                 *rest))
                server.stdin.write(f"{c} {o} {hw} {k} {pad} {a.iters} {a.warmup} " +
                                   " ".join(map(str, rest)) + "\n")
                server.stdin.flush()
                line = server.stdout.readline()
                if not line:
                    raise RuntimeError("bench_conv server exited")
                merge(best_q, layer, tuple(float(v) for v in line.split()))
    finally:
        server.stdin.close()
        server.wait()
    return best_t, best_q


def main():
    a = parse_args(iters=15, warmup=3, batch=128)
    best_t, best_q = alternate(a, LAYERS, lambda layer: " ".join(map(str, layer)))

    print(f"conv2d, batch {a.batch}, {a.threads} threads, {a.rounds} rounds x {a.iters} "
          f"iterations; ms; ratio = torch / qgrad (> 1: qgrad faster)")
    cols = ["step med", "step min", "fwd med", "fwd min", "step cpu", "fwd cpu"]
    print(f"{'layer':<14}" + "".join(f"{'torch ' + c:>16}{'qgrad ' + c:>16}{'ratio':>7}"
                                     for c in cols))
    n = len(cols)
    tot_t, tot_q = [0.0] * n, [0.0] * n
    for layer in LAYERS:
        c, o, hw, k, _ = layer
        t, q = best_t[layer], best_q[layer]
        tot_t = [x + y for x, y in zip(tot_t, t)]
        tot_q = [x + y for x, y in zip(tot_q, q)]
        print(f"{f'{c}->{o}k{k}@{hw}':<14}" + "".join(f"{t[i]:16.2f}{q[i]:16.2f}{t[i] / q[i]:7.2f}"
                                                  for i in range(n)))
    print(f"{'total':<14}" + "".join(f"{tot_t[i]:16.2f}{tot_q[i]:16.2f}{tot_t[i] / tot_q[i]:7.2f}"
                                     for i in range(n)))


if __name__ == "__main__":
    main()
