#!/usr/bin/python3
"""Training throughput of lenet5bn and vggfm (and optionally resnet20), qgrad vs PyTorch 1.13, side
by side: SGD training steps (forward, cross-entropy, backward, momentum 0.9 + weight decay 5e-4
update) on synthetic 1x28x28 batches (randn images, uniform labels; the same for both) with
batch 128 and 2 threads. Each measurement is a fresh process, alternating qgrad
(build/bench/bench_train) and PyTorch (this script in --torch-worker mode), so both see the same
machine load and report their own peak RSS (VmHWM: the whole process, runtime libraries
included). Prints images/s (best and median over the rounds), the ratio qgrad / PyTorch (> 1
means qgrad is faster) and the peak RSS of each.

Usage: python3 bench/bench_train.py [build/bench/bench_train] [--models lenet5bn,vggfm]
                                    [--rounds 5] [--steps 30] [--warmup 5] [--batch 128]
                                    [--threads 2]   (or --threads 1,2 for one table each)
                                    [--qat torch_ao] [--torch-qat matched|standard]
                                    [--baseline OTHER/bench_train]

--qat torch_ao adds quantization-aware training: each round then runs four processes per model
(qgrad float, PyTorch float, qgrad QAT, PyTorch QAT) and the table gives the images/s of each,
the QAT/float step cost ratio of each framework (float images/s / QAT images/s; 1.05 = QAT
steps take 5% longer) and qgrad QAT / PyTorch QAT. qgrad: `bench_train --qat torch_ao`, the
default torch_ao recipe of `qgrad train` (PyTorch 1.13's get_default_qat_qconfig("fbgemm"):
FusedMovingAvgObsFakeQuantize on the input of every Conv2d and Linear, quint8 [0, 127]
per-tensor affine, and on their weights, qint8 per-channel symmetric; no batch-norm fusion).
PyTorch, eager mode, prepared by torch.ao.quantization.prepare_qat with that qconfig:
  matched  (default) what qgrad quantizes: every Conv2d / Linear is wrapped as
           QuantStub -> layer -> DeQuantStub; the QuantStub carries the default qconfig (its
           output fake quantizer is the layer's input quantizer) and the layer the default
           weight fake quantizer with an nn.Identity activation (no output fake quantizer, as
           qgrad quantizes the next layer's input instead). No fusion, as qgrad's default
           recipe (fuse_bn false). Differences: PyTorch calls the Identity through a forward
           hook, and its QuantStub/DeQuantStub are Python module calls qgrad does not make.
  standard the usual eager recipe: QuantStub -> model -> DeQuantStub with the default qconfig
           on the whole model, no fusion: fake quantizers on the outputs of the stub, every
           Conv2d, BatchNorm2d and Linear (more and larger tensors than qgrad quantizes).

--baseline B also runs B, the bench_train of another qgrad build (the commit before a change),
in the same alternation, and prints a last table: this build's images/s against B's (best and
median rounds; > 1 means this build is faster), for every qgrad kind timed.

On a machine shared with other work, 2-thread numbers of both frameworks collapse whenever
another process takes one core (OpenMP barriers wait for the descheduled thread): compare the
best rounds, and the 1-thread table, which such load disturbs much less.
The PyTorch models are the twins of nn/models/zoo.cpp defined in tests/fixtures/gen_zoo.py.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def torch_models():
    """The PyTorch twins of nn/models/zoo.cpp, as the golden zoo tests define them."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "fixtures"))
    from gen_zoo import MODELS
    return MODELS


def torch_qat_model(model, recipe):
    """`model` prepared for eager QAT with get_default_qat_qconfig("fbgemm") (see the module
    docstring for the two recipes)."""
    import torch.nn as nn
    import torch.ao.quantization as tq
    qconfig = tq.get_default_qat_qconfig("fbgemm")
    if recipe == "standard":
        model = nn.Sequential(tq.QuantStub(), model, tq.DeQuantStub())
        model.qconfig = qconfig
        return tq.prepare_qat(model)
    weight_only = tq.QConfig(activation=nn.Identity, weight=qconfig.weight)

    def wrap(module):
        for name, child in list(module.named_children()):
            if isinstance(child, (nn.Conv2d, nn.Linear)):
                stub = tq.QuantStub()
                stub.qconfig = qconfig
                child.qconfig = weight_only
                setattr(module, name, nn.Sequential(stub, child, tq.DeQuantStub()))
            else:
                wrap(child)

    wrap(model)
    return tq.prepare_qat(model)


def torch_training_step(model_name, batch, device="cpu", qat=None):
    """The benchmark's PyTorch training step on `device`: returns step(i), which trains on the
    i-th batch of a pool of 4 synthetic ones (bench_gpu.py uses it too). qat: None (float), or
    "matched" / "standard" (torch_qat_model)."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    pool = [(torch.randn(batch, 1, 28, 28, device=device),
             torch.randint(0, 10, (batch,), device=device)) for _ in range(4)]
    model = torch_models()[model_name]()
    if qat:
        model = torch_qat_model(model, qat)
    model = model.to(device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)

    def step(i):
        x, y = pool[i % 4]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def torch_worker(model_name, batch, steps, warmup, threads, qat=None):
    """Runs in its own process; prints the same line as bench_train."""
    import warnings
    import torch
    warnings.filterwarnings("ignore", message="Please use quant_min and quant_max")
    torch.set_num_threads(threads)
    step = torch_training_step(model_name, batch, qat=qat)
    for i in range(warmup):
        step(i)
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    s = time.perf_counter() - start
    print(f"{model_name} {batch} {steps * batch / s:.1f} {peak_rss_mib():.1f}", flush=True)


def run(cmd, env):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    _, _, ips, rss = out.split()
    return float(ips), float(rss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary", nargs="?", default="build/bench/bench_train")
    ap.add_argument("--models", default="lenet5bn,vggfm")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", default="2", help="thread count, or a list: 1,2")
    ap.add_argument("--qat", choices=["torch_ao"],
                    help="also time quantization-aware training with this recipe")
    ap.add_argument("--torch-qat", choices=["matched", "standard"], default="matched",
                    help="the PyTorch QAT model (see the docstring)")
    ap.add_argument("--baseline", metavar="BINARY",
                    help="another build's bench_train, timed in the same rounds (before/after)")
    ap.add_argument("--torch-worker", metavar="MODEL", help=argparse.SUPPRESS)
    ap.add_argument("--worker-qat", choices=["matched", "standard"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_worker:
        torch_worker(args.torch_worker, args.batch, args.steps, args.warmup, int(args.threads),
                     args.worker_qat)
        return
    if args.qat:
        qat_main(args)
        return
    models = args.models.split(",")
    import torch
    print(f"training images/s, batch {args.batch}, torch {torch.__version__}; {args.rounds} "
          f"alternating rounds of {args.steps} timed steps (after {args.warmup}); best = fastest "
          f"round (least disturbed by other load), med = median round; ratio = qgrad / torch")
    for threads in [int(t) for t in str(args.threads).split(",")]:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        common = ["--batch", str(args.batch), "--steps", str(args.steps), "--warmup",
                  str(args.warmup), "--threads", str(threads)]
        res = {(m, who): [] for m in models for who in ("qgrad", "torch", "baseline")}
        for _ in range(args.rounds):  # alternate so both see the same machine load
            for m in models:
                res[(m, "qgrad")].append(run([args.binary, m] + common, env))
                res[(m, "torch")].append(run(
                    [sys.executable, os.path.abspath(__file__), "--torch-worker", m] + common, env))
                if args.baseline:
                    res[(m, "baseline")].append(run([args.baseline, m] + common, env))
        print(f"\n{threads} thread(s)")
        print(f"{'model':<9} {'qgrad best':>10} {'torch best':>10} {'ratio':>6} {'qgrad med':>10} "
              f"{'torch med':>10} {'ratio':>6} {'qgrad RSS':>10} {'torch RSS':>10}")
        for m in models:
            q, t = res[(m, "qgrad")], res[(m, "torch")]
            qb, tb = max(x[0] for x in q), max(x[0] for x in t)
            qm, tm = statistics.median(x[0] for x in q), statistics.median(x[0] for x in t)
            qr, tr = max(x[1] for x in q), max(x[1] for x in t)
            print(f"{m:<9} {qb:10.0f} {tb:10.0f} {qb / tb:6.2f} {qm:10.0f} {tm:10.0f} "
                  f"{qm / tm:6.2f} {qr:6.0f} MiB {tr:6.0f} MiB", flush=True)
        if args.baseline:
            print_baseline(models, {(m, "float"): ([x[0] for x in res[(m, "qgrad")]],
                                                   [x[0] for x in res[(m, "baseline")]])
                                    for m in models})


def print_baseline(models, pairs):
    """This build against --baseline: pairs[(model, kind)] = (images/s here, images/s there)."""
    print(f"\nthis build / baseline (> 1: this build is faster)")
    print(f"{'model':<9} {'kind':<6} {'best':>8} {'baseline':>9} {'ratio':>6} {'med':>8} "
          f"{'baseline':>9} {'ratio':>6}")
    for (m, kind), (here, there) in pairs.items():
        hb, bb = max(here), max(there)
        hm, bm = statistics.median(here), statistics.median(there)
        print(f"{m:<9} {kind:<6} {hb:8.0f} {bb:9.0f} {hb / bb:6.3f} {hm:8.0f} {bm:9.0f} "
              f"{hm / bm:6.3f}", flush=True)

def qat_main(args):
    """Float and QAT steps of both frameworks, four alternating processes per model and round."""
    import torch
    models = args.models.split(",")
    print(f"training images/s, float and QAT (qgrad --qat {args.qat}; PyTorch eager prepare_qat "
          f"with get_default_qat_qconfig('fbgemm'), {args.torch_qat} recipe), batch "
          f"{args.batch}, torch {torch.__version__}; {args.rounds} alternating rounds of "
          f"{args.steps} timed steps (after {args.warmup}); QAT/float = float images/s / QAT "
          f"images/s (the step cost ratio); q/t = qgrad QAT / PyTorch QAT images/s")
    for threads in [int(t) for t in str(args.threads).split(",")]:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        common = ["--batch", str(args.batch), "--steps", str(args.steps), "--warmup",
                  str(args.warmup), "--threads", str(threads)]
        kinds = ("qgrad", "qgrad_qat", "torch", "torch_qat")
        res = {(m, k): [] for m in models for k in kinds + ("baseline", "baseline_qat")}
        me = [sys.executable, os.path.abspath(__file__)]
        for _ in range(args.rounds):
            for m in models:
                res[(m, "qgrad")].append(run([args.binary, m] + common, env)[0])
                res[(m, "torch")].append(run(me + ["--torch-worker", m] + common, env)[0])
                res[(m, "qgrad_qat")].append(
                    run([args.binary, m] + common + ["--qat", args.qat], env)[0])
                res[(m, "torch_qat")].append(run(
                    me + ["--torch-worker", m, "--worker-qat", args.torch_qat] + common, env)[0])
                if args.baseline:
                    res[(m, "baseline")].append(run([args.baseline, m] + common, env)[0])
                    res[(m, "baseline_qat")].append(
                        run([args.baseline, m] + common + ["--qat", args.qat], env)[0])
        print(f"\n{threads} thread(s)")
        print(f"{'model':<9} {'':4} {'qgrad':>7} {'qgrad':>7} {'QAT/':>6} {'torch':>7} "
              f"{'torch':>7} {'QAT/':>6} {'q/t':>5}")
        print(f"{'':<9} {'':4} {'float':>7} {'QAT':>7} {'float':>6} {'float':>7} {'QAT':>7} "
              f"{'float':>6} {'QAT':>5}")
        for m in models:
            for label, agg in (("best", max), ("med", statistics.median)):
                qf, qq, tf, tq = (agg(res[(m, k)]) for k in kinds)
                print(f"{m:<9} {label:<4} {qf:7.0f} {qq:7.0f} {qf / qq:6.3f} {tf:7.0f} "
                      f"{tq:7.0f} {tf / tq:6.3f} {qq / tq:5.2f}", flush=True)
        if args.baseline:
            pairs = {}
            for m in models:
                pairs[(m, "float")] = (res[(m, "qgrad")], res[(m, "baseline")])
                pairs[(m, "QAT")] = (res[(m, "qgrad_qat")], res[(m, "baseline_qat")])
            print_baseline(models, pairs)


if __name__ == "__main__":
    main()
