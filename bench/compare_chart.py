"""Draw the PNG chart of a bench/compare JSON file: one panel per scenario, one bar per broker.

Run with a Python that has matplotlib (bench/compare installs one in .bench/plot-venv, so the
project's own environment does not need it):

    .bench/plot-venv/bin/python bench/compare_chart.py compare-....json compare-....png

Only the standard library and matplotlib are imported: this runs outside relaymq's virtualenv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLOURS = {"relaymq": "#1f77b4", "mosquitto": "#2ca02c", "amqtt": "#d62728"}


def main(json_path: str, png_path: str) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    doc = json.loads(Path(json_path).read_text(encoding="utf-8"))
    results = doc["results"]
    brokers = list(results)
    # only the rows that were run (--scenarios)
    rows = [row for row in doc["rows"] if any(results[b].get(row["key"]) for b in brokers)]
    cols = min(3, max(1, len(rows)))
    lines = -(-len(rows) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(4.2 * cols, 3.2 * lines), squeeze=False)
    for ax, row in zip(axes.flat, rows, strict=False):  # the grid may have a spare cell
        figures = [results[b].get(row["key"]) or {} for b in brokers]
        values = [f.get("value") for f in figures]
        full = max((f.get("count") or 0 for f in figures), default=0)
        heights = [v or 0 for v in values]
        bars = ax.bar(brokers, heights, color=[COLOURS.get(b, "grey") for b in brokers])
        for bar, value, fig_ in zip(bars, values, figures, strict=True):
            label = "n/a" if value is None else (f"{value:,.0f}" if value >= 100 else f"{value:.2f}")
            if value is not None and fig_.get("count") and fig_["count"] < full:
                label += f"\n(n={fig_['count']:,})"   # a scaled run: not the same count
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=8)
        better = "higher" if row["higher_is_better"] else "lower"
        ax.set_title(f"{row['title']}\n({row['unit']}, {better} is better)", fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(rows):]:
        ax.axis("off")
    kind = "quick" if doc.get("quick") else "full"
    fig.suptitle(f"relaymq vs Mosquitto vs amqtt ({kind} run, {doc.get('started', '')})",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: compare_chart.py RESULT.json CHART.png", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
