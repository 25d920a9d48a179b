#!/usr/bin/python3
"""Deploy throughput of trained quantization-aware lenet5bn / vggfm / resnet20 checkpoints (any zoo
model trained on Fashion-MNIST), six paths side by side in one run, each on the same normalised
Fashion-MNIST test images (all 10,000) in batches of 256 with 2 threads:
  qgrad int8     quant::convert on oneDNN (build/bench/bench_deploy run --path int8)
  qgrad FP32     the checkpoint's weights in the unquantized model, its module forward
                 (bench_deploy run --path fp32)
  qgrad FP32 fused
                 the same float model compiled by deploy::compile_inference: batch norms folded,
                 activations and residual adds fused, blocked layouts (--path fp32-fused)
  ORT int8       ONNX Runtime (npm onnxruntime-node, CPU) on the QDQ export of the checkpoint
  ORT FP32       ONNX Runtime on the float export of the same weights (batch norm folded)
  PyTorch FP32   PyTorch 1.13 eager, torch.no_grad, the twin of the zoo model
                 (tests/fixtures/gen_zoo.py) with the same weights loaded (float.safetensors)
`bench_deploy prepare` writes the inputs, labels, both ONNX files and the float weights once per
model. Then each round runs every path in a fresh process, in turn, so they share the machine's
load: one untimed warm-up batch and --passes timed passes over the test set, forward time only;
a process reports its best pass. The table gives the best and median images/s over the rounds,
each path's accuracy and peak RSS (VmHWM of the whole process: qgrad, node with ONNX Runtime, or
python with torch; each holds the 31 MB of input images), and the ratios of the best images/s to
qgrad FP32 and to ONNX Runtime of the same precision (> 1: faster).

Usage: /usr/bin/python3 bench/bench_deploy.py lenet5bn=RUN/last.safetensors [vggfm=...]
           [--bench build/bench/bench_deploy] [--ort-dir build/onnxruntime]
           [--rounds 3] [--passes 2] [--batch 256] [--threads 2] [--data-dir D]
           [--paths "qgrad FP32 fused,ORT FP32"]
--paths runs only the named paths (comma-separated, as in the table).
ONNX Runtime comes from --ort-dir/node_modules/onnxruntime-node (ctest's ONNX Runtime test
installs it into build/onnxruntime); without node or the package its rows say "skipped".
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_SCRIPT = os.path.join(HERE, "..", "deploy", "ort", "run_onnx_batches.js")
PATHS = ["qgrad int8", "qgrad FP32", "qgrad FP32 fused", "ORT int8", "ORT FP32", "PyTorch FP32"]
QGRAD_PATH_FLAG = {"qgrad int8": "int8", "qgrad FP32": "fp32", "qgrad FP32 fused": "fp32-fused"}


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (the format is an 8-byte little-endian header
    length, a JSON header, then the raw tensors)."""
    import numpy as np
    dtypes = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b],
                                  dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    return out


def torch_worker(model_name, prep, batch, threads, passes):
    """Runs in its own process; prints the line bench_deploy run prints."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
    from gen_zoo import MODELS
    torch.set_num_threads(threads)
    model = MODELS[model_name]()
    state = {k: torch.from_numpy(v.copy()) for k, v in
             read_safetensors(os.path.join(prep, "float.safetensors")).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        sys.exit(f"torch worker: missing {missing}, unexpected {unexpected}")
    model.eval()
    x = torch.from_numpy(np.fromfile(os.path.join(prep, "input.f32"), dtype=np.float32)
                         .reshape(-1, 1, 28, 28))
    labels = torch.from_numpy(np.fromfile(os.path.join(prep, "labels.i64"), dtype=np.int64))
    n = x.shape[0]
    best, correct = float("inf"), 0
    with torch.no_grad():
        model(x[:batch])  # warm-up
        for _ in range(passes):
            seconds, correct = 0.0, 0
            for s in range(0, n, batch):
                xb = x[s:s + batch]
                t0 = time.perf_counter()
                y = model(xb)
                seconds += time.perf_counter() - t0
                correct += int((y.argmax(1) == labels[s:s + batch]).sum())
            best = min(best, seconds)
    print(f"torch {n / best:.1f} {correct} {n} {peak_rss_mib():.1f}", flush=True)


def run_path(path, a, model, ckpt, prep, labels):
    """(images/s, correct, count, peak RSS MiB) of one fresh process, or None when skipped."""
    common = ["--batch", str(a.batch), "--threads", str(a.threads), "--passes", str(a.passes)]
    if path.startswith("qgrad"):
        cmd = [a.bench, "run", "--checkpoint", ckpt, "--path", QGRAD_PATH_FLAG[path], "--input",
               prep] + common
        _, ips, correct, count, rss = subprocess.run(cmd, check=True, capture_output=True,
                                                     text=True).stdout.split()
        return float(ips), int(correct), int(count), float(rss)
    if path.startswith("ORT"):
        import numpy as np
        if not os.path.isfile(os.path.join(a.ort_dir, "node_modules", "onnxruntime-node",
                                           "package.json")):
            return None
        onnx = os.path.join(prep, "qdq.onnx" if "int8" in path else "float.onnx")
        out = os.path.join(prep, "ort_out.f32")
        n = len(labels)
        cmd = ["node", ORT_SCRIPT, a.ort_dir, onnx, os.path.join(prep, "input.f32"),
               f"{n},1,28,28", str(a.batch), str(a.threads), out, str(a.passes)]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                      text=True).stdout.strip().splitlines()[-1])
        y = np.fromfile(out, dtype=np.float32).reshape(n, -1)
        correct = int((y.argmax(1) == labels).sum())
        return n / min(r["seconds"]), correct, n, r["max_rss_kib"] / 1024.0
    cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", model, prep] + common
    _, ips, correct, count, rss = subprocess.run(cmd, check=True, capture_output=True,
                                                 text=True).stdout.split()
    return float(ips), int(correct), int(count), float(rss)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-worker":
        ap = argparse.ArgumentParser()
        ap.add_argument("--torch-worker", nargs=2)
        ap.add_argument("--batch", type=int)
        ap.add_argument("--threads", type=int)
        ap.add_argument("--passes", type=int)
        w = ap.parse_args()
        torch_worker(w.torch_worker[0], w.torch_worker[1], w.batch, w.threads, w.passes)
        return
    import numpy as np
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoints", nargs="+", help="MODEL=CHECKPOINT")
    ap.add_argument("--bench", default="build/bench/bench_deploy")
    ap.add_argument("--ort-dir", default="build/onnxruntime")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data-dir", default="")
    ap.add_argument("--paths", default=",".join(PATHS),
                    help="comma-separated paths to run (default: all)")
    a = ap.parse_args()
    paths = [p.strip() for p in a.paths.split(",")]
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        ap.error(f"unknown paths {unknown}; choose from {PATHS}")
    print(f"bench_deploy.py: batch {a.batch}, {a.threads} threads, {a.rounds} rounds of "
          f"{a.passes} passes, {time.strftime('%Y-%m-%d %H:%M')}, load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    for spec in a.checkpoints:
        model, ckpt = spec.split("=", 1)
        with tempfile.TemporaryDirectory(prefix="bench_deploy.") as prep:
            cmd = [a.bench, "prepare", "--checkpoint", ckpt, "--out", prep]
            if a.data_dir:
                cmd += ["--data-dir", a.data_dir]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
            labels = np.fromfile(os.path.join(prep, "labels.i64"), dtype=np.int64)
            results = {p: [] for p in PATHS}
            for _ in range(a.rounds):
                for p in paths:
                    r = run_path(p, a, model, ckpt, prep, labels)
                    if r is not None:
                        results[p].append(r)
            report(model, ckpt, results)


def report(model, ckpt, results):
    best = {p: max(r[0] for r in rs) for p, rs in results.items() if rs}
    print(f"\n{model} ({ckpt})")
    print(f"| path | images/s best | median | accuracy | peak RSS MiB | vs qgrad FP32 | vs ORT |")
    print("|---|---|---|---|---|---|---|")
    for p in PATHS:
        rs = results[p]
        if not rs:
            print(f"| {p} | skipped | | | | | |")
            continue
        ips = [r[0] for r in rs]
        acc = 100.0 * rs[-1][1] / rs[-1][2]
        rss = max(r[3] for r in rs)
        ort = "ORT int8" if "int8" in p else "ORT FP32"
        vs_fp32 = f"{best[p] / best['qgrad FP32']:.2f}x" if "qgrad FP32" in best else ""
        vs_ort = f"{best[p] / best[ort]:.2f}x" if ort in best and not p.startswith("ORT") else ""
        print(f"| {p} | {best[p]:.0f} | {statistics.median(ips):.0f} | {acc:.2f}% | {rss:.0f} | "
              f"{vs_fp32} | {vs_ort} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
