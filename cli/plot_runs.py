#!/usr/bin/python3
"""Draws the pictures of `qgrad plot` with matplotlib, from the plot spec that qgrad writes.

`qgrad plot` (cli/plot_command.cpp) reads and checks the run folders, results.json and
sensitivity.json files (docs/results_format.md), and hands this script one JSON spec:
{"format": "png"|"svg", "out_dir": DIR, "runs": [{"label", "description", "epoch",
"train_loss", "test_acc"}], "results": <qgrad.results/1>, "sensitivity": <qgrad.sensitivity/1>},
with accuracies as fractions and null for NaN. The script only draws: training_curves,
accuracy_vs_bits and sensitivity pictures in out_dir. Every picture goes to a temporary name
first and all are renamed once all are drawn, so a failure leaves no half-written file. Without
matplotlib it exits with status 3 and says what to install.

    python3 cli/plot_runs.py SPEC.json
"""

import json
import math
import re
import os
import sys

NO_MATPLOTLIB = 3  # the status plot_command.cpp turns into its "install matplotlib" error


def floats(values):
    """JSON numbers with null as NaN (matplotlib leaves a gap there)."""
    return [math.nan if v is None else float(v) for v in values]


def percent(values):
    return [100.0 * v for v in floats(values)]


def draw_training_curves(plt, runs):
    from matplotlib.ticker import MaxNLocator

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4.3), constrained_layout=True)
    for run in runs:
        label = run["label"]
        if run["description"]:
            label += f" ({run['description']})"
        (line,) = ax_loss.plot(run["epoch"], floats(run["train_loss"]), marker="o", label=label)
        ax_acc.plot(run["epoch"], percent(run["test_acc"]), marker="o", color=line.get_color(),
                    label=label)
    ax_loss.set_title("Training loss")
    ax_loss.set_ylabel("train loss (epoch mean)")
    ax_acc.set_title("Test accuracy")
    ax_acc.set_ylabel("test accuracy (%)")
    for ax in (ax_loss, ax_acc):
        ax.set_xlabel("epoch")
        # Epochs are whole numbers: no 1.5 ticks on a two-epoch run.
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
    ax_acc.legend(loc="best", fontsize="small")
    fig.suptitle("Training curves")
    return fig


def recipe_series(cell):
    """The recipe without its bit widths ("lsq_w4a4" -> "lsq", "nvidia_int8 max" -> "nvidia max"),
    or the family when the cell names no recipe."""
    recipe = cell.get("recipe") or cell["family"]
    return re.sub(r"_?(w\d+a\d+|int\d+)", "", recipe) or cell["family"]


def series_key(cell):
    """Cells on one line: same model, method, recipe series and activation rule."""
    act = cell["act_bits"]
    rule = "float inputs" if act is None else ("W=A" if act == cell["weight_bits"] else f"A{act}")
    return (cell["model"], cell["method"], recipe_series(cell), rule)


def draw_accuracy_vs_bits(plt, results):
    fig, ax = plt.subplots(figsize=(7.5, 4.8), constrained_layout=True)
    cells = results["cells"]
    series = {}
    for cell in cells:
        if cell["method"] != "float":
            series.setdefault(series_key(cell), []).append(cell)
    # Lines that meet at one bit width (int8 QAT and PTQ) are nudged apart to stay readable.
    nudge = 0.06
    for i, ((model, method, family, rule), members) in enumerate(series.items()):
        members.sort(key=lambda c: c["weight_bits"])
        shift = nudge * (i - (len(series) - 1) / 2)
        bits = [c["weight_bits"] + shift for c in members]
        mean = [math.nan if c["mean"] is None else 100.0 * c["mean"] for c in members]
        std = [0.0 if c["std"] is None else 100.0 * c["std"] for c in members]
        label = f"{model} {family} {method.upper()} ({rule})"
        line = ax.errorbar(bits, mean, yerr=std, marker="o", capsize=4, label=label)
        color = line[0].get_color()
        xs = [c["weight_bits"] + shift for c in members for _ in c["accuracy"]]
        ax.scatter(xs, [a for c in members for a in percent(c["accuracy"])], s=12, alpha=0.45,
                   color=color, zorder=3)
    float_cells = [c for c in cells if c["method"] == "float" and c["mean"] is not None]
    for i, cell in enumerate(float_cells):
        style = ["--", ":", "-."][i % 3]
        mean, std = 100.0 * cell["mean"], 100.0 * (cell["std"] or 0.0)
        ax.axhline(mean, color="0.25", linestyle=style, linewidth=1.2,
                   label=f"{cell['model']} float ({mean:.2f}%)")
        ax.axhspan(mean - std, mean + std, color="0.5", alpha=0.12, linewidth=0)
    bit_widths = sorted({c["weight_bits"] for c in cells if c["weight_bits"] is not None})
    if bit_widths:
        ax.set_xticks(bit_widths)
        ax.set_xlim(bit_widths[0] - 0.5, bit_widths[-1] + 0.5)
    ax.set_xlabel("weight bit width")
    ax.set_ylabel("test accuracy (%)")
    title = "Accuracy against bit width"
    if results.get("dataset"):
        title += f" on {results['dataset']}"
    ax.set_title(title + "\nmean \u00b1 std over seeds; dots are single seeds", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return fig


def draw_sensitivity(plt, s):
    layers = s["layers"]
    names = [layer["name"] for layer in layers]
    x = list(range(len(layers)))
    # Wider with more layers, up to 40 inches (Agg refuses images beyond 2^16 pixels).
    width = min(40.0, max(6.5, 0.75 * len(layers) + 2.5))
    fig, (ax_drop, ax_sqnr) = plt.subplots(2, 1, figsize=(width, 7), sharex=True,
                                           constrained_layout=True)
    float_acc = s["float_accuracy"]
    drops = [math.nan if layer["accuracy"] is None else 100.0 * (float_acc - layer["accuracy"])
             for layer in layers]
    colors = ["tab:red" if d > 0 else "tab:green" for d in drops]
    bars = ax_drop.bar(x, drops, color=colors)
    ax_drop.bar_label(bars, labels=["" if math.isnan(d) else f"{d:.2f}" for d in drops],
                      padding=2, fontsize="small")
    ax_drop.axhline(0, color="0.2", linewidth=0.8)
    ax_drop.set_ylabel("accuracy drop (pp)\nonly this layer quantized")
    ax_drop.margins(y=0.15)
    summary = f"float {100.0 * float_acc:.2f}%"
    if s.get("quantized_accuracy") is not None:
        summary += f", all layers quantized {100.0 * s['quantized_accuracy']:.2f}%"
    ax_drop.set_title(summary, fontsize="medium")

    roles = sorted({role for layer in layers for role in layer["sqnr_db"]})
    bar_width = 0.8 / len(roles)
    for i, role in enumerate(roles):
        values = [layer["sqnr_db"].get(role) for layer in layers]
        offsets = [xi - 0.4 + bar_width * (i + 0.5) for xi in x]
        ax_sqnr.bar(offsets, floats(values), width=bar_width, label=role)
        for xi, v in zip(offsets, values):
            if v is None:  # infinite or not measured: say so instead of an empty slot
                ax_sqnr.text(xi, 0, "n/a", ha="center", va="bottom", fontsize="x-small")
    ax_sqnr.set_ylabel("SQNR (dB)")
    ax_sqnr.legend(title="quantizer", fontsize="small")
    ax_sqnr.set_xticks(x)
    long_names = max(len(n) for n in names) * len(names) > 60
    ax_sqnr.set_xticklabels(names, rotation=40 if long_names else 0,
                            ha="right" if long_names else "center")
    ax_sqnr.set_xlabel("layer")
    for ax in (ax_drop, ax_sqnr):
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"Layer sensitivity: {s['model']}, {s['recipe']}")
    return fig


class DrawingFailed(Exception):
    """matplotlib could not draw a figure of values qgrad accepted (1e308, say)."""

    def __init__(self, name, cause):
        super().__init__(f"matplotlib cannot draw {name} ({type(cause).__name__}: {cause}); "
                         "values far outside the usual range, such as a loss of 1e308, can do "
                         "this: leave such a run out")
        self.name = name


def save_all(plt, figures, out_dir, fmt):
    """Draws every figure to a temporary file, then renames them all: all or nothing."""
    pending = []  # (temporary, final) not renamed yet
    try:
        for name, fig in figures:
            final = os.path.join(out_dir, f"{name}.{fmt}")
            tmp = os.path.join(out_dir, f".{name}.{fmt}.tmp.{os.getpid()}")
            pending.append((tmp, final))
            # No date in SVGs, so the same data gives the same file.
            metadata = {"Date": None} if fmt == "svg" else None
            try:
                fig.savefig(tmp, format=fmt, dpi=150, metadata=metadata)
            except Exception as e:  # matplotlib's own limits: one line for the user, no traceback
                raise DrawingFailed(name, e) from e
            plt.close(fig)
        # The one failure a rename can meet here; checked before the first rename.
        for _, final in pending:
            if os.path.isdir(final):
                raise IsADirectoryError(f"{final} is a folder; the picture would replace it")
        while pending:
            tmp, final = pending[0]
            os.replace(tmp, final)
            pending.pop(0)
            print(f"wrote {final}")
    except BaseException:
        for tmp, _ in pending:
            if os.path.exists(tmp):
                os.remove(tmp)
        raise


def main(argv):
    if len(argv) != 2:
        print("usage: plot_runs.py SPEC.json (qgrad plot writes the spec)", file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as e:
        print(f"matplotlib is missing for {sys.executable} ({e}); install it with "
              "'apt-get install python3-matplotlib' or 'QGRAD_WITH_PLOT=1 bash "
              "scripts/install_deps.sh', or point QGRAD_PYTHON to a Python that has it",
              file=sys.stderr)
        return NO_MATPLOTLIB
    matplotlib.rcParams["svg.hashsalt"] = "qgrad"  # stable SVG element ids
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, smaller
    # Labels are folder and layer names: a "$" in one is text, not the start of a formula.
    matplotlib.rcParams["text.parse_math"] = False
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    figures = []
    drawers = (("training_curves", "runs", draw_training_curves),
               ("accuracy_vs_bits", "results", draw_accuracy_vs_bits),
               ("sensitivity", "sensitivity", draw_sensitivity))
    try:
        for name, key, draw in drawers:
            if spec.get(key):
                try:
                    figures.append((name, draw(plt, spec[key])))
                except Exception as e:
                    raise DrawingFailed(name, e) from e
        save_all(plt, figures, spec["out_dir"], spec["format"])
    except (DrawingFailed, OSError) as e:  # said in one line: no traceback
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
