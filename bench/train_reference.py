#!/usr/bin/python3
"""The PyTorch 1.13 twin of `qgrad train` for the accuracy targets: trains lenet5bn / vggfm /
resnet20 (the models of bench_train.py, twins of nn/models/zoo.cpp) on Fashion-MNIST with the
recipe of configs/*.json (SGD lr 0.05, momentum 0.9, weight decay 5e-4, batch 128, constant lr,
normalise (x/255 - 0.2860)/0.3530, reshuffled every epoch, last partial batch kept) and prints
the test accuracy after every epoch, so a qgrad run can be compared with PyTorch's on the same
machine. Seeds differ between the frameworks (different generators), so compare over several
seeds: a single run of 2 epochs at a constant lr of 0.05 moves by about a point between seeds.

Usage: python3 bench/train_reference.py [--model vggfm] [--epochs 2] [--seeds 0,1,2]
                                        [--threads 2] [--data /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import torch_models  # noqa: E402


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(data_dir, prefix):
    def find(name):
        for suffix in ("", ".gz"):
            p = os.path.join(data_dir, name + suffix)
            if os.path.exists(p):
                return p
        sys.exit(f"train_reference: {name}[.gz] not found in {data_dir}")
    images = read_idx(find(f"{prefix}-images-idx3-ubyte")).astype(np.float32)
    labels = read_idx(find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    return (images / 255.0 - 0.2860) / 0.3530, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="vggfm")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    xtr, ytr = load_split(args.data, "train")
    xte, yte = load_split(args.data, "t10k")
    xtr, ytr = torch.from_numpy(xtr).unsqueeze(1), torch.from_numpy(ytr)
    xte, yte = torch.from_numpy(xte).unsqueeze(1), torch.from_numpy(yte)
    print(f"torch {torch.__version__}, {args.model}, {args.epochs} epochs, batch {args.batch}, "
          f"sgd lr {args.lr} momentum 0.9 wd 5e-4, {args.threads} threads")
    finals = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        torch.manual_seed(seed)
        model = torch_models()[args.model]()
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
        for epoch in range(args.epochs):
            model.train()
            start = time.perf_counter()
            perm = torch.randperm(len(ytr))
            for i in range(0, len(ytr), args.batch):
                idx = perm[i:i + args.batch]
                loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            train_s = time.perf_counter() - start
            model.eval()
            correct = 0
            with torch.no_grad():
                for i in range(0, len(yte), 1000):
                    correct += (model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
            acc = correct / len(yte)
            print(f"seed {seed} epoch {epoch + 1}: test acc {100 * acc:.2f}%, "
                  f"{len(ytr) / train_s:.0f} images/s", flush=True)
        finals.append(acc)
    print(f"final test acc over seeds: mean {100 * np.mean(finals):.2f}%, "
          f"min {100 * min(finals):.2f}%, max {100 * max(finals):.2f}%")


if __name__ == "__main__":
    main()
