"""Renders bench_models.py's figures (``--json``) as the bar chart in docs/performance.md:
ember's step time as a multiple of PyTorch's per workload, with the issue's targets.

    python bench/bench_models.py --json /tmp/models.json
    python bench/plot_models.py /tmp/models.json docs/img/bench_models.png

Needs matplotlib (``pip install -e .[bench]``).
"""
from __future__ import annotations

import json
import sys

TARGET = {"train": 1.25, "infer": 1.1, "chain": 2.0}


def main(src, dst):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(src) as f:
        data = json.load(f)
    rows = data["rows"]
    names = [r["workload"] for r in rows]
    ratios = [r["ember_ms"] / r["torch_ms"] for r in rows]
    colors = ["#2a7ab0" if r <= TARGET[row["kind"]] else "#d9822b"
              for r, row in zip(ratios, rows)]
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=110)
    ax.bar(range(len(rows)), ratios, color=colors)
    for i, row in enumerate(rows):
        ax.hlines(TARGET[row["kind"]], i - 0.4, i + 0.4, colors="black", linestyles="dashed",
                  linewidth=1)
        ax.text(i, ratios[i] + 0.03, f"{ratios[i]:.2f}", ha="center", fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("ember time / PyTorch time")
    ax.set_title(f"One step, side by side with PyTorch {data['torch']} (2 threads); "
                 f"dashed: target", fontsize=9)
    fig.tight_layout()
    fig.savefig(dst)


if __name__ == "__main__":
    main(*sys.argv[1:3])
