#!/usr/bin/python3
"""Test-set accuracy of an exported model in ONNX Runtime (npm onnxruntime-node, through
run_onnx.js): Fashion-MNIST's 10,000 test images, normalised as qgrad train's default config
does ((x/255 - 0.2860)/0.3530), one batch. Compare with the accuracy `qgrad train` / `qgrad eval`
print for the same checkpoint.

Usage: /usr/bin/python3 tests/deploy/ort/eval_onnx_fashion_mnist.py MODEL.onnx ORT_DIR
       [--data /usr/share/datasets/fashion-mnist]
ORT_DIR holds node_modules/onnxruntime-node (ctest installs it into build/onnxruntime).
"""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("ort_dir")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    with gzip.open(os.path.join(a.data, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(a.data, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    x = ((images.astype(np.float32) / 255.0 - 0.2860) / 0.3530).astype(np.float32)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_onnx.js")
    with tempfile.TemporaryDirectory() as d:
        xf, yf = os.path.join(d, "x.f32"), os.path.join(d, "y.f32")
        x.tofile(xf)
        shape = ",".join(str(s) for s in x.shape)
        r = subprocess.run(["node", script, a.ort_dir, a.model, xf, shape, yf])
        if r.returncode != 0:
            sys.exit("eval_onnx_fashion_mnist: run_onnx.js failed")
        y = np.fromfile(yf, dtype=np.float32).reshape(len(labels), -1)
    print(f"{a.model}: ONNX Runtime test accuracy {100.0 * (y.argmax(1) == labels).mean():.2f}%")


if __name__ == "__main__":
    main()
