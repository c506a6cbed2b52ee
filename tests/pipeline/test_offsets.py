"""Offsets, partition planning and admission control, without Spark (issue 7, Tests item 1).

Spec: issue 7 "offsets per partition; admission control (maxRecordsPerBatch, also under
Trigger.AvailableNow); new partitions picked up; a clear failure when retention removed
offsets still needed"; design guide "Spark reads ranges of it by offset".
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relaymq.pipeline.log import PartitionInfo, RetentionError
from relaymq.pipeline.offsets import (OffsetError, admit, check_retained, ending_offsets, plan_ranges,
                                      select_partitions, starting_offsets, total, with_new_partitions)


def parts(**extents: tuple[int, int]) -> dict[str, PartitionInfo]:
    return {name.replace("_", "-"): PartitionInfo(name.replace("_", "-"), a, b) for name, (a, b) in extents.items()}


def test_starting_offsets_earliest_latest_and_json() -> None:
    """issue 7 "offsets per partition": earliest = first retained, latest = next seq, JSON overrides."""
    available = parts(t_0=(3, 10), t_1=(0, 4))
    assert starting_offsets("earliest", available) == {"t-0": 3, "t-1": 0}
    assert starting_offsets("latest", available) == {"t-0": 10, "t-1": 4}
    assert starting_offsets('{"t-0": 7}', available) == {"t-0": 7, "t-1": 0}
    assert ending_offsets("latest", available) == {"t-0": 10, "t-1": 4}


@pytest.mark.parametrize("bad", ["{", '{"t-0": -1}', '["t-0"]', '{"t-0": "3"}', '{"t-0": true}'])
def test_bad_offsets_are_refused(bad: str) -> None:
    """issue 7 offsets option: anything but earliest/latest/{partition: seq>=0} is an error."""
    with pytest.raises(OffsetError):
        starting_offsets(bad, parts(t_0=(0, 1)))


def test_new_partitions_are_picked_up_at_their_first_entry() -> None:
    """issue 7 "new partitions picked up": a partition unknown to the start offsets joins at first_seq."""
    available = parts(t_0=(0, 5), t_1=(2, 6))
    assert with_new_partitions({"t-0": 5}, available) == {"t-0": 5, "t-1": 2}
    assert admit({"t-0": 5}, available) == {"t-0": 5, "t-1": 6}


def test_admit_everything_without_a_limit() -> None:
    """issue 7 admission control: no maxRecordsPerBatch = all committed entries."""
    assert admit({"t-0": 1, "t-1": 0}, parts(t_0=(0, 9), t_1=(0, 3))) == {"t-0": 9, "t-1": 3}


def test_admit_shares_the_budget_fairly() -> None:
    """issue 7 maxRecordsPerBatch: the total is exact and a busy partition does not starve a small one."""
    available = parts(t_0=(0, 1000), t_1=(0, 3))
    end = admit({"t-0": 0, "t-1": 0}, available, max_records=10)
    assert total({"t-0": 0, "t-1": 0}, end) == 10
    assert end["t-1"] == 3 and end["t-0"] == 7


def test_admit_respects_the_available_now_cap() -> None:
    """issue 7 "also under Trigger.AvailableNow": entries committed after the trigger started are not admitted."""
    available = parts(t_0=(0, 50))
    assert admit({"t-0": 0}, available, max_records=100, cap={"t-0": 20}) == {"t-0": 20}
    assert admit({"t-0": 20}, available, max_records=100, cap={"t-0": 20}) == {"t-0": 20}


@given(backlogs=st.lists(st.integers(0, 200), min_size=1, max_size=6), budget=st.integers(1, 300))
def test_admit_never_exceeds_budget_or_backlog(backlogs: list[int], budget: int) -> None:
    """issue 7 admission control, as a property: min(budget, backlog) entries, never past next_seq."""
    available = {f"p-{i}": PartitionInfo(f"p-{i}", 0, n) for i, n in enumerate(backlogs)}
    start = {name: 0 for name in available}
    end = admit(start, available, max_records=budget)
    assert total(start, end) == min(budget, sum(backlogs))
    assert all(start[n] <= end[n] <= available[n].next_seq for n in available)


def test_plan_ranges_splits_large_backlogs() -> None:
    """issue 7 partition planning: one range per partition with data, split at maxRecordsPerSplit."""
    ranges = plan_ranges({"a-0": 0, "a-1": 5}, {"a-0": 25, "a-1": 5}, max_per_split=10)
    assert [(r.partition, r.start, r.end) for r in ranges] == [("a-0", 0, 10), ("a-0", 10, 20), ("a-0", 20, 25)]


def test_retention_gap_is_a_clear_failure() -> None:
    """issue 7 "a clear failure when retention removed offsets still needed"; failOnDataLoss=false skips knowingly."""
    available = parts(t_0=(40, 50))
    with pytest.raises(RetentionError, match=r"partition t-0: offset 12 .*below 40"):
        check_retained({"t-0": 12}, available)
    assert check_retained({"t-0": 12}, available, fail_on_data_loss=False) == {"t-0": 40}
    assert check_retained({"t-0": 45}, available) == {"t-0": 45}


def test_select_partitions_by_rule() -> None:
    """issue 7 archive rules: a query may read the partitions of chosen rules only."""
    names = ["telemetry-0", "telemetry-1", "orders-0", "tele-0"]
    assert select_partitions(names, "telemetry") == ["telemetry-0", "telemetry-1"]
    assert select_partitions(names, None) == sorted(names)
