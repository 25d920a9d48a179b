#!/usr/bin/python3
"""Times PyTorch's max_pool2d (2x2 stride 2; 3x3 stride 2 padding 1) and batch_norm (training, affine) forward and
forward+backward in float32 on [128, 32, 28, 28] and [128, 64, 14, 14] with 2 threads, runs
qgrad's bench_poolbn binary on the same work (alternating rounds, best median of each), and
prints both with the ratios qgrad / PyTorch (< 1 means qgrad is faster) of the best time
(least disturbed by other load on the machine) and of the median.

Usage: python3 bench/bench_poolbn.py [build/bench/bench_poolbn] [--rounds 5] [--reps 20] [--threads 2]
(--threads sets torch.set_num_threads and OMP_NUM_THREADS of the qgrad binary).
"""
import argparse
import os
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F


def time_ms(f, warmup, reps):
    """(best, median) milliseconds of f over reps calls after warmup calls."""
    for _ in range(warmup):
        f()
    t = []
    for _ in range(reps):
        a = time.perf_counter()
        f()
        t.append((time.perf_counter() - a) * 1e3)
    return min(t), statistics.median(t)


def torch_times(reps):
    out = {}
    g = torch.Generator().manual_seed(0)
    for s in [(128, 32, 28, 28), (128, 64, 14, 14)]:
        tag = "x".join(map(str, s))
        x = torch.randn(s, generator=g)
        xl = x.clone().requires_grad_(True)
        for name, k, st, p in [("max_pool2d_k2s2", 2, 2, 0), ("max_pool2d_k3s2p1", 3, 2, 1)]:
            oh, ow = (s[2] + 2 * p - k) // st + 1, (s[3] + 2 * p - k) // st + 1
            gy_pool = torch.randn(s[0], s[1], oh, ow, generator=g)

            def pool_fwd():
                with torch.no_grad():
                    F.max_pool2d(x, k, st, p)

            def pool_fwdbwd():
                xl.grad = None
                F.max_pool2d(xl, k, st, p).backward(gy_pool)

            out[(name, tag, "fwd")] = time_ms(pool_fwd, 3, reps)
            out[(name, tag, "fwdbwd")] = time_ms(pool_fwdbwd, 3, reps)

        gy_bn = torch.randn(s, generator=g)
        w = torch.ones(s[1], requires_grad=True)
        b = torch.zeros(s[1], requires_grad=True)
        rm, rv = torch.zeros(s[1]), torch.ones(s[1])

        def bn_fwd():
            with torch.no_grad():
                F.batch_norm(x, rm, rv, w, b, training=True)

        def bn_fwdbwd():
            xl.grad = None
            w.grad = None
            b.grad = None
            F.batch_norm(xl, rm, rv, w, b, training=True).backward(gy_bn)

        out[("batch_norm", tag, "fwd")] = time_ms(bn_fwd, 3, reps)
        out[("batch_norm", tag, "fwdbwd")] = time_ms(bn_fwdbwd, 3, reps)
    return out


def qgrad_times(binary, reps, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    res = subprocess.run([binary, str(reps)], check=True, capture_output=True, text=True, env=env)
    out = {}
    for line in res.stdout.splitlines():
        op, shape, mode, best, median = line.split()
        out[(op, shape, mode)] = (float(best), float(median))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default="build/bench/bench_poolbn")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    binary, rounds, reps = args.binary, args.rounds, args.reps
    torch.set_num_threads(args.threads)
    inf = (float("inf"), float("inf"))
    best_t, best_q = {}, {}
    for _ in range(rounds):  # alternate, so both see the same machine load
        for k, v in torch_times(reps).items():
            best_t[k] = tuple(map(min, v, best_t.get(k, inf)))
        for k, v in qgrad_times(binary, reps, args.threads).items():
            best_q[k] = tuple(map(min, v, best_q.get(k, inf)))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {rounds} alternating "
          f"rounds of {reps} timed calls; best = fastest call, median = best round's median (ms)")
    print(f"{'op':<17} {'shape':<14} {'mode':<7} {'torch best':>10} {'qgrad best':>10} "
          f"{'ratio':>6} {'torch med':>10} {'qgrad med':>10} {'ratio':>6}")
    for k in best_t:
        (tb, tm), (qb, qm) = best_t[k], best_q.get(k, inf)
        print(f"{k[0]:<17} {k[1]:<14} {k[2]:<7} {tb:10.3f} {qb:10.3f} {qb / tb:6.2f} "
              f"{tm:10.3f} {qm:10.3f} {qm / tm:6.2f}")


if __name__ == "__main__":
    main()
