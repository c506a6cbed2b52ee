"""bench/compare's table: which figures it compares and how it labels them (issue 8).

The ratios are the issue's targets, so a ratio between runs of different sizes, or a figure
whose duplicates or losses go unmentioned, would misstate them. Pure functions: no broker.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import compare  # noqa: E402


def test_rows_report_what_the_issue_asks() -> None:
    """Issue 8 scenarios 7 and 8: the time to receive all retained messages and the
    reconnect + drain time, in seconds (lower is better); 9 the restart time."""
    rows = {row.key: row for row in compare.ROWS}
    for key in ("s7", "s8", "s9"):
        assert rows[key].unit == "s" and not rows[key].higher_is_better
    assert "persistent" in rows["s2"].title and "clean" in rows["s2c"].title


def test_different_counts_are_labelled_and_not_compared_as_is() -> None:
    """A scaled amqtt run (n=10,000 beside 100,000): its cells say the count; seconds are
    compared through the per-message rate (marked ~) where the row has one, and a restart
    time (s9) against a different backlog gets no ratio at all."""
    results = {
        "relaymq": {"s7": {"value": 1.0, "rate": 100_000.0, "count": 100_000},
                    "s9": {"value": 1.5, "count": 100_000}},
        "amqtt": {"s7": {"value": 0.5, "rate": 20_000.0, "count": 10_000},
                  "s9": {"value": 0.4, "count": 10_000}},
    }
    text = compare.table(results, ["relaymq", "amqtt"])
    s7 = next(line for line in text.splitlines() if line.startswith("7 "))
    s9 = next(line for line in text.splitlines() if line.startswith("9 "))
    assert "(n=10,000)" in s7 and s7.rstrip().endswith("~5.00x")
    assert "(n=10,000)" in s9 and s9.rstrip().endswith("n differs")
    assert "n=100,000" not in text
    assert not any(line.startswith("1 ") for line in text.splitlines())   # rows not run


def test_same_counts_compare_the_figures_in_the_rows_direction() -> None:
    """Seconds and memory: lower is better, so the advantage is theirs / ours; rates ours /
    theirs. A note on either side (losses, duplicates) flags the ratio with *."""
    s8 = compare.ROW_BY_KEY["s8"]
    assert compare.ratio_cell(s8, {"value": 2.0, "count": 5}, {"value": 8.0, "count": 5}) == "4.00x"
    s1 = compare.ROW_BY_KEY["s1"]
    assert compare.ratio_cell(s1, {"value": 50.0, "count": 5},
                              {"value": 100.0, "count": 5, "note": "dup 3"}) == "0.50x*"


def test_duplicates_and_losses_are_noted() -> None:
    """receive_rate counts every delivery, duplicates included (relaymq.bench.report), so a
    duplicate must show beside the figure, as a loss does."""
    assert compare._notes(lost=2, duplicates=1_234) == "lost 2, dup 1,234"
    assert compare._notes() == ""
    cell = compare._cell(compare.ROW_BY_KEY["s2"], {"value": 1000.0, "note": "dup 7"})
    assert cell == "1,000 (dup 7)"


def test_amqtt_scaling_leaves_the_load_scenarios_whole() -> None:
    """Audit finding 5: amqtt runs scenarios 1-6 at full counts; only 7-9 are scaled."""
    scaled = compare.FULL.scaled(0.1)
    assert (scaled.one_to_one, scaled.fan_out, scaled.fan_in, scaled.idle) == (
        compare.FULL.one_to_one, compare.FULL.fan_out, compare.FULL.fan_in, compare.FULL.idle)
    assert (scaled.retained, scaled.backlog) == (10_000, 10_000)
