"""Draw the PNGs of a bench/scale JSON file: one per curve, throughput and p99 latency (or, for
retained topics, the storing rate) against the work, one line per broker, log-scaled x.

Run with a Python that has matplotlib (bench/scale installs one in .bench/plot-venv):

    .bench/plot-venv/bin/python bench/scale_chart.py scale-....json

writes ``scale-...-<curve>.png`` beside the JSON. Only the standard library and matplotlib are
imported: this runs outside relaymq's virtualenv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COLOURS = {"relaymq": "#1f77b4", "mosquitto": "#2ca02c"}
#: The second panel of each curve: (figure key, axis label).
SECOND = {"retained": ("store_rate", "stored (msg/s)")}
DEFAULT_SECOND = ("p99_ms", "p99 latency, paced (ms)")


def main(json_path: str) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(json_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    for key, curve in doc["curves"].items():
        second_key, second_label = SECOND.get(key, DEFAULT_SECOND)
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
        for broker, data in curve["brokers"].items():
            points = [p for p in data["points"] if p["figures"].get("throughput")]
            xs = [p["x"] for p in points]
            colour = COLOURS.get(broker, "grey")
            left.plot(xs, [p["figures"]["throughput"] for p in points], "o-", color=colour, label=broker)
            seconds = [(p["x"], p["figures"].get(second_key)) for p in points]
            right.plot([x for x, v in seconds if v is not None], [v for _, v in seconds if v is not None],
                       "o-", color=colour, label=broker)
        for ax, label in ((left, "throughput (msg/s)"), (right, second_label)):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(curve["x_label"])
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        kind = "quick" if doc.get("quick") else "full"
        fig.suptitle(f"{curve['title']} ({kind} run, {doc.get('started', '')})", fontsize=11)
        fig.tight_layout()
        fig.savefig(path.with_name(f"{path.stem}-{key}.png"), dpi=90)
        plt.close(fig)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: scale_chart.py SCALE.json", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1]))
