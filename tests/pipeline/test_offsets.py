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


def stamps_of(series: dict[str, list[float]]):
    """A LogAccess.timestamps over in-memory series (entry seq = index in the list)."""
    asked: list[tuple[str, int, int]] = []

    def timestamps(name: str, start: int, end: int) -> list[float]:
        asked.append((name, start, end))
        return series[name][start:end]

    timestamps.asked = asked  # type: ignore[attr-defined]
    return timestamps


def test_admit_takes_the_oldest_entries_across_partitions() -> None:
    """issue 7 maxRecordsPerBatch (audit item 1): the budget goes to the oldest entries by archive
    time, so a partition with a small backlog of *newer* entries does not run ahead of a busy
    one whose older entries are still waiting (equal shares let it, and the job's watermark
    then dropped the busy partition's events as late)."""
    series = {"t-0": [float(i) for i in range(1, 101)], "t-1": [50.0 + i for i in range(10)]}
    available = {n: PartitionInfo(n, 0, len(v)) for n, v in series.items()}
    end = admit({"t-0": 0, "t-1": 0}, available, max_records=10, timestamps=stamps_of(series))
    assert end == {"t-0": 10, "t-1": 0}  # t-1's entries (t=50..59) are newer than t-0's first ten
    end = admit({"t-0": 45, "t-1": 0}, available, max_records=10, timestamps=stamps_of(series))
    assert end == {"t-0": 52, "t-1": 3}  # t-0 at 46..52 and t-1 at 50..52: interleaved by time


def test_admit_breaks_timestamp_ties_by_partition_then_seq() -> None:
    """audit item 1 "ties/partial at the cutoff handled deterministically": equal timestamps are
    taken partition by partition in name order, each in seq order; the same call gives the same
    answer."""
    series = {"t-1": [5.0, 5.0, 5.0], "t-0": [5.0, 5.0, 6.0]}
    available = {n: PartitionInfo(n, 0, 3) for n in series}
    first = admit({"t-0": 0, "t-1": 0}, available, max_records=3, timestamps=stamps_of(series))
    assert first == {"t-0": 2, "t-1": 1}
    assert admit({"t-0": 0, "t-1": 0}, available, max_records=3, timestamps=stamps_of(series)) == first


def test_admit_reads_timestamps_only_when_it_must() -> None:
    """admission control: no timestamps are read when the budget covers every backlog or only one
    partition has one; at most ``max_records`` are read per partition."""
    series = {"t-0": [float(i) for i in range(1000)], "t-1": [0.5, 1.5]}
    available = {n: PartitionInfo(n, 0, len(v)) for n, v in series.items()}
    timestamps = stamps_of(series)
    assert admit({"t-0": 0, "t-1": 0}, available, max_records=2000, timestamps=timestamps) == {"t-0": 1000, "t-1": 2}
    assert admit({"t-0": 0, "t-1": 2}, available, max_records=7, timestamps=timestamps) == {"t-0": 7, "t-1": 2}
    assert timestamps.asked == []
    admit({"t-0": 0, "t-1": 0}, available, max_records=7, timestamps=timestamps)
    assert sorted(timestamps.asked) == [("t-0", 0, 7), ("t-1", 0, 2)]
    with pytest.raises(ValueError, match="archive timestamps"):
        admit({"t-0": 0, "t-1": 0}, available, max_records=7)


def test_admit_respects_the_available_now_cap() -> None:
    """issue 7 "also under Trigger.AvailableNow": entries committed after the trigger started are not admitted."""
    available = parts(t_0=(0, 50))
    assert admit({"t-0": 0}, available, max_records=100, cap={"t-0": 20}) == {"t-0": 20}
    assert admit({"t-0": 20}, available, max_records=100, cap={"t-0": 20}) == {"t-0": 20}
    series = {"t-0": [float(i) for i in range(50)], "t-1": [float(i) for i in range(50)]}
    both = {n: PartitionInfo(n, 0, 50) for n in series}
    assert admit({"t-0": 0, "t-1": 0}, both, max_records=30, cap={"t-0": 5, "t-1": 50},
                 timestamps=stamps_of(series)) == {"t-0": 5, "t-1": 25}


@given(data=st.data(), budget=st.integers(1, 300))
def test_admit_takes_exactly_the_oldest_entries(data, budget: int) -> None:
    """issue 7 admission control, as a property checked against a plain sort of every entry:
    min(budget, backlog) entries, each partition a prefix of its backlog, and every admitted
    entry older (timestamp, partition, seq) than every entry left waiting."""
    count = data.draw(st.integers(1, 5))
    series = {f"p-{i}": sorted(data.draw(st.lists(st.integers(0, 40).map(float), max_size=80))) for i in range(count)}
    start = {name: data.draw(st.integers(0, len(v))) for name, v in series.items()}
    available = {name: PartitionInfo(name, 0, len(v)) for name, v in series.items()}
    end = admit(start, available, max_records=budget, timestamps=stamps_of(series))
    waiting = sorted((t, name, seq) for name, v in series.items() for seq, t in enumerate(v) if seq >= start[name])
    admitted = waiting[:budget]
    assert total(start, end) == len(admitted)
    assert all(start[n] <= end[n] <= available[n].next_seq for n in available)
    for name in series:
        assert end[name] - start[name] == sum(1 for _t, n, _s in admitted if n == name)


def test_admit_is_valid_when_timestamps_are_out_of_order() -> None:
    """admission control on a log written before timestamps were made increasing: each partition
    still contributes a prefix of its backlog (offsets never skip an entry) and the total is exact."""
    series = {"t-0": [9.0, 1.0, 2.0], "t-1": [3.0, 4.0, 5.0]}
    available = {n: PartitionInfo(n, 0, 3) for n in series}
    end = admit({"t-0": 0, "t-1": 0}, available, max_records=4, timestamps=stamps_of(series))
    assert end == {"t-0": 1, "t-1": 3}


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
