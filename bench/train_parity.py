#!/usr/bin/python3
"""Step-by-step parity of qgrad training with PyTorch 1.13 on real Fashion-MNIST batches.

The accuracy targets compare whole training runs, which differ between the frameworks in their
random streams (initial weights, shuffling) and move by about a point between seeds, so a run
cannot tell noise from a real difference. This replays training instead: build/bench/train_parity
trains a zoo model with SGD (lr 0.05, momentum 0.9, weight decay 5e-4, batch 128) as `qgrad train`
does and writes its initial weights, batches and losses; this script checks the batches are
normalised rows of the training set, loads the same weights into the PyTorch twin
(tests/fixtures/gen_zoo.py) and trains it on the same batches. Two modes:
  - free run (default): PyTorch trains --steps steps on its own; prints the first step's loss,
    gradients and update, the loss of later steps and the weights after the last one. float32
    rounding differences grow through training, so the runs drift apart after a few steps.
    --baseline also trains a second PyTorch copy with another thread count (another summation
    order) and prints its losses beside them: the drift PyTorch shows against itself. With
    --test-acc and --steps 938 (2 epochs of 469 batches), the test accuracy of both final
    models: the two frameworks trained from the same weights on the same batches.
  - --replay RANGES (1-based steps, e.g. 1-20,465-475,930-938: both epoch boundaries of a 2-epoch
    run and its end): every step in the ranges alone, PyTorch starting from qgrad's whole training
    state before it (weights, BatchNorm statistics, momentum), in float32 and float64. Prints for
    each step how far qgrad's float32 result and PyTorch's float32 result are from float64.

Usage: python3 bench/train_parity.py [--model vggfm] [--steps 50] [--seed 0] [--threads 2]
                                     [--baseline] [--test-acc] [--replay 1-20,930-938]
                                     [--binary build/bench/train_parity] [--data DIR]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
sys.path.insert(0, HERE)
from gen_nn import read_safetensors  # noqa: E402
from gen_zoo import MODELS  # noqa: E402
from train_reference import load_split  # noqa: E402


def rel_err(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def worst(pairs):
    """(name, relative error) of the tensor furthest apart among (name, qgrad, torch) triples."""
    errs = [(name, rel_err(q, t)) for name, q, t in pairs]
    return max(errs, key=lambda e: e[1])


def parse_ranges(text):
    steps = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        steps += list(range(int(a), int(b or a) + 1))
    return sorted(set(steps))


def load_batch(out, step):
    return (np.load(os.path.join(out, f"x{step}.npy")), np.load(os.path.join(out, f"y{step}.npy")))


def check_batches(args, batches):
    """Every image of every batch is a row of the normalised training set with its label; no row
    appears twice within an epoch."""
    xtr, ytr = load_split(args.data, "train")
    rows = {xtr[i].tobytes(): i for i in range(len(ytr))}
    per_epoch = -(-len(ytr) // 128)
    seen = {}
    worst_px = 0.0
    for step, (x, y) in batches.items():
        epoch = seen.setdefault((step - 1) // per_epoch, set())
        for img, label in zip(x[:, 0], y):
            idx = rows.get(img.astype(np.float32).tobytes())
            if idx is None:  # not bit-identical: the nearest row with this label
                cand = np.nonzero(ytr == label)[0]
                d = np.abs(xtr[cand] - img).reshape(len(cand), -1).max(1)
                idx = int(cand[d.argmin()])
                worst_px = max(worst_px, float(d.min()))
            assert ytr[idx] == label, f"step {step}: a label does not match the training set"
            assert idx not in epoch, f"step {step}: a training image appears twice in the epoch"
            epoch.add(idx)
    print(f"batches: {len(batches)} checked ({sum(len(y) for _, y in batches.values())} images), "
          f"all training rows with their labels, none repeated within an epoch; largest pixel "
          f"difference to numpy's normalisation {worst_px:.2e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="vggfm")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps qgrad trains (default 50, or the last replayed step)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--replay", default="", help="1-based step ranges to replay, e.g. 1-20,930-938")
    ap.add_argument("--binary", default=os.path.join(HERE, "..", "build", "bench", "train_parity"))
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--baseline", action="store_true",
                    help="free run: also PyTorch against itself with another thread count")
    ap.add_argument("--test-acc", action="store_true",
                    help="free run: also the test accuracy of both final models")
    args = ap.parse_args()
    replay_steps = parse_ranges(args.replay) if args.replay else []
    steps = args.steps or (replay_steps[-1] if replay_steps else 50)

    import torch
    torch.set_num_threads(args.threads)
    options = ["--seed", str(args.seed), "--steps", str(steps), "--lr", str(args.lr), "--threads",
               str(args.threads), "--data", args.data]
    if args.replay:
        options += ["--replay-steps", args.replay]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([args.binary, args.model, out] + options, check=True)
        files = {name: read_safetensors(os.path.join(out, name))[0]
                 for name in os.listdir(out) if name.endswith(".safetensors")}
        q_losses = [float(v) for v in open(os.path.join(out, "losses.txt")).read().split()]
        used = replay_steps or range(1, len(q_losses) + 1)
        batches = {step: load_batch(out, step) for step in used}
    check_batches(args, batches)
    if replay_steps:
        replay(args, files, batches, replay_steps)
    else:
        free_run(args, files, batches, q_losses)


def twin(args, state, dtype):
    """The PyTorch twin in `dtype` with the weights and buffers of a qgrad training state, in
    train mode, and its SGD optimiser holding the state's momentum buffers (if any)."""
    import torch
    model = MODELS[args.model]().to(dtype)
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in state.items()
                           if not k.startswith("momentum.")}, strict=True)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    for n, p in model.named_parameters():
        if "momentum." + n in state:
            opt.state[p]["momentum_buffer"] = torch.from_numpy(
                np.array(state["momentum." + n])).to(dtype)
    return model, opt


def backward(model, opt, x, y):
    """Forward, cross-entropy and backward on one batch (as qgrad train); returns the loss."""
    import torch
    import torch.nn.functional as F
    dtype = next(model.parameters()).dtype
    loss = F.cross_entropy(model(torch.from_numpy(x).to(dtype)), torch.from_numpy(y))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    return loss.item()


def free_run_losses(args, files, batches):
    """Trains the twin from qgrad's initial weights on every batch; returns it and its losses."""
    import torch
    model, opt = twin(args, files["init.safetensors"], torch.float32)
    losses = []
    for step in sorted(batches):
        losses.append(backward(model, opt, *batches[step]))
        opt.step()
    return model, losses


def free_run(args, files, batches, q_losses):
    import torch
    # The first step in detail: loss, gradients and the state after the update.
    model, opt = twin(args, files["init.safetensors"], torch.float32)
    loss = backward(model, opt, *batches[1])
    grads = files["grads1.safetensors"]
    name, err = worst((n, grads[n], p.grad.numpy()) for n, p in model.named_parameters())
    print(f"step 1: loss qgrad {q_losses[0]:.7f} torch {loss:.7f}; "
          f"worst gradient {name} relative error {err:.2e}")
    opt.step()
    sd = model.state_dict()
    after = files["step1.safetensors"]
    name, err = worst((n, after[n], sd[n].numpy()) for n in sd if sd[n].dtype.is_floating_point)
    print(f"step 1: worst parameter/buffer after the update {name} relative error {err:.2e}")

    model, t_losses = free_run_losses(args, files, batches)
    columns = [("torch", t_losses)]
    if args.baseline:
        other = 1 if args.threads != 1 else 2
        torch.set_num_threads(other)
        columns.append((f"torch {other}T", free_run_losses(args, files, batches)[1]))
        torch.set_num_threads(args.threads)
    print("step  loss qgrad" + "".join(f"  {who:>10s}  difference" for who, _ in columns))
    for i in sorted({0, 1, 2, 3, 4, 9, 19, 49, 99, 199, 468, 469, 499, len(q_losses) - 1}):
        if i < len(q_losses):
            print(f"{i + 1:4d}  {q_losses[i]:10.6f}" +
                  "".join(f"  {ls[i]:10.6f}  {q_losses[i] - ls[i]:+.2e}" for _, ls in columns))
    print(f"mean loss over {len(q_losses)} steps: qgrad {np.mean(q_losses):.6f}, " +
          ", ".join(f"{who} {np.mean(ls):.6f}" for who, ls in columns))
    sd = model.state_dict()
    final = files["final.safetensors"]
    for n in sd:
        if sd[n].dtype.is_floating_point:
            print(f"after step {len(q_losses)}: {n:24s} relative difference "
                  f"{rel_err(final[n], sd[n].numpy()):.2e}")
    if args.test_acc:
        xte, yte = load_split(args.data, "t10k")
        xte = torch.from_numpy(xte).unsqueeze(1)
        for who, m in (("qgrad", twin(args, final, torch.float32)[0]), ("torch", model)):
            m.eval()
            with torch.no_grad():
                acc = (m(xte).argmax(1).numpy() == yte).mean()
            print(f"test accuracy after step {len(q_losses)}: {who} {100 * acc:.2f}%")


def replay_step(args, before, x, y, dtype):
    """One SGD step of the PyTorch twin from `before` (a qgrad training state) in `dtype`;
    returns the training state after it as float64 numpy arrays."""
    model, opt = twin(args, before, dtype)
    backward(model, opt, x, y)
    opt.step()
    got = {n: t.double().numpy() for n, t in model.state_dict().items()
           if t.dtype.is_floating_point}
    for n, p in model.named_parameters():
        got["momentum." + n] = opt.state[p]["momentum_buffer"].double().numpy()
    return got


def replay(args, files, batches, steps):
    """Each step alone, from qgrad's state before it, in PyTorch float32 and float64; prints per
    step the largest relative error against float64 over all tensors of the training state, of
    qgrad's float32 result and of PyTorch's, and where it is."""
    import torch
    print("replayed steps: from qgrad's state before each step, the same step in PyTorch float32\n"
          "and float64; the largest relative error against float64 of each float32 result")
    print("step  qgrad f32 (tensor)                  torch f32 (tensor)")
    ratios = []
    for step in steps:
        before = files["init.safetensors" if step == 1 else f"state{step - 1}.safetensors"]
        x, y = batches[step]
        ref = replay_step(args, before, x, y, torch.float64)
        t32 = replay_step(args, before, x, y, torch.float32)
        after = files[f"state{step}.safetensors"]
        q_name, q_err = worst((n, after[n], ref[n]) for n in ref)
        t_name, t_err = worst((n, t32[n], ref[n]) for n in ref)
        ratios.append(q_err / max(t_err, 1e-30))
        print(f"{step:4d}  {q_err:.2e} {q_name:24s}  {t_err:.2e} {t_name:24s}")
    print(f"qgrad error / torch error over {len(ratios)} steps: median {np.median(ratios):.2f}, "
          f"max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
