"""Offsets, partition planning and admission control for reading the log (no Spark here).

An offset is a dict ``{partition name: next seq to read}``: JSON-able as Spark's streaming
checkpoints want, and meaningful to a person reading the checkpoint. These functions decide:

* where a query starts (``starting_offsets``: ``earliest``, ``latest`` or explicit JSON);
* how far a micro-batch goes (``admit``): everything available, or at most ``max_records``
  taken oldest first by archive timestamp across the partitions (admission control: the
  partitions advance together in time), never beyond a cap fixed when ``Trigger.AvailableNow``
  started;
* which ranges the batch reads (``plan_ranges``), at most ``max_per_split`` entries each so a
  large backlog becomes several Spark tasks;
* whether a needed offset was removed by retention (``check_retained``): a clear error, never
  silently skipped data, unless the query chose ``failOnDataLoss=false``.

Partitions that appear after the query started are picked up at their first retained entry.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from relaymq.pipeline.log import PartitionInfo, RetentionError

Offsets = dict[str, int]


class OffsetError(ValueError):
    """An offsets option that cannot be understood."""


def starting_offsets(spec: str, available: Mapping[str, PartitionInfo]) -> Offsets:
    """The offsets a new query starts from: ``earliest``, ``latest`` or a JSON object
    ``{"partition": seq}`` (partitions it does not name start at their earliest entry)."""
    spec = (spec or "earliest").strip()
    if spec == "earliest":
        return {name: info.first_seq for name, info in available.items()}
    if spec == "latest":
        return {name: info.next_seq for name, info in available.items()}
    given = parse_offsets(spec)
    result = {name: info.first_seq for name, info in available.items()}
    result.update(given)
    return result


def parse_offsets(text: str) -> Offsets:
    """A JSON object of partition -> non-negative integer offset."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise OffsetError(f"offsets must be 'earliest', 'latest' or a JSON object: {error}") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0 for k, v in value.items()
    ):
        raise OffsetError('offsets must be a JSON object like {"telemetry-0": 42}')
    return dict(value)


def ending_offsets(spec: str, available: Mapping[str, PartitionInfo]) -> Offsets:
    """Where a batch read stops: ``latest`` (what is committed now) or explicit JSON."""
    spec = (spec or "latest").strip()
    if spec == "latest":
        return {name: info.next_seq for name, info in available.items()}
    return parse_offsets(spec)


def with_new_partitions(start: Mapping[str, int], available: Mapping[str, PartitionInfo]) -> Offsets:
    """``start`` plus every partition that appeared since, at its first retained entry."""
    result = dict(start)
    for name, info in available.items():
        result.setdefault(name, info.first_seq)
    return result


#: ``timestamps(partition, start, end)``: archive timestamps of entries start <= seq < end, in
#: seq order (LogAccess.timestamps).
Timestamps = Callable[[str, int, int], Sequence[float]]


def admit(start: Mapping[str, int], available: Mapping[str, PartitionInfo], max_records: int | None = None,
          cap: Mapping[str, int] | None = None, timestamps: Timestamps | None = None) -> Offsets:
    """The end offsets of the next micro-batch.

    Without ``max_records`` every committed entry (up to ``cap``, the Trigger.AvailableNow
    bound) is admitted. With it, at most ``max_records`` in total, taken **in archive order
    across partitions**: the entries admitted are the ``max_records`` oldest by archive
    timestamp (ties: partition name, then seq), so all partitions advance together. (Sharing
    the budget equally instead lets a partition with a small backlog run ahead of the others
    in time, and a job's event-time watermark then drops the slower partitions' events as
    late.) ``timestamps`` reads the entries' timestamps; it is asked only when the budget does
    not cover every backlog and more than one partition has one. Partitions in ``start`` but
    gone from ``available`` keep their offset.
    """
    start = with_new_partitions(start, available)
    limit_of: dict[str, int] = {}
    for name, offset in start.items():
        info = available.get(name)
        top = info.next_seq if info is not None else offset
        if cap is not None:
            top = min(top, cap.get(name, offset))
        limit_of[name] = max(offset, top)
    if max_records is None:
        return limit_of
    backlog = {name: limit_of[name] - start[name] for name in sorted(start) if limit_of[name] > start[name]}
    if sum(backlog.values()) <= max_records:
        return limit_of
    end = dict(start)
    if len(backlog) == 1:
        (name,) = backlog
        end[name] += max_records
        return end
    if timestamps is None:
        raise ValueError("admission control across partitions needs the entries' archive timestamps")
    return oldest_first(start, backlog, max_records, timestamps)


def oldest_first(start: Mapping[str, int], backlog: Mapping[str, int], budget: int,
                 timestamps: Timestamps) -> Offsets:
    """End offsets admitting the ``budget`` oldest entries of the backlogs (a k-way merge by
    (timestamp, partition, seq); each partition contributes a prefix of its backlog, so the
    result is valid even if a partition's timestamps were not in order)."""
    series = {name: list(timestamps(name, start[name], start[name] + min(count, budget)))
              for name, count in backlog.items()}
    heap = [(stamps[0], name, 0) for name, stamps in series.items() if stamps]
    heapq.heapify(heap)
    end = dict(start)
    for _ in range(budget):
        if not heap:
            break
        _stamp, name, index = heapq.heappop(heap)
        end[name] += 1
        if index + 1 < len(series[name]):
            heapq.heappush(heap, (series[name][index + 1], name, index + 1))
    return end


@dataclass(frozen=True, slots=True)
class Range:
    """Entries ``start <= seq < end`` of one partition: the work of one Spark task."""

    partition: str
    start: int
    end: int


def plan_ranges(start: Mapping[str, int], end: Mapping[str, int], max_per_split: int | None = None) -> list[Range]:
    """Non-empty ranges between two offsets, split so none is longer than ``max_per_split``."""
    ranges: list[Range] = []
    for name in sorted(end):
        low, high = start.get(name, 0), end[name]
        step = max_per_split or max(1, high - low)
        while low < high:
            ranges.append(Range(name, low, min(high, low + step)))
            low += step
    return ranges


def check_retained(start: Mapping[str, int], available: Mapping[str, PartitionInfo], fail_on_data_loss: bool = True) -> Offsets:
    """Offsets still readable: raises RetentionError for the first partition whose needed
    entries retention removed; with ``fail_on_data_loss`` False moves such offsets up to the
    first retained entry instead (the gap is skipped knowingly)."""
    result = dict(start)
    for name, offset in sorted(start.items()):
        info = available.get(name)
        if info is not None and offset < info.first_seq:
            if fail_on_data_loss:
                raise RetentionError(name, offset, info.first_seq)
            result[name] = info.first_seq
    return result


def total(start: Mapping[str, int], end: Mapping[str, int]) -> int:
    """How many entries lie between two offsets."""
    return sum(max(0, end[name] - start.get(name, 0)) for name in end)


def select_partitions(names: Iterable[str], rules: str | None) -> list[str]:
    """The partitions a query reads: all, or those of the comma-separated ``rules``."""
    if not rules:
        return sorted(names)
    wanted = {rule.strip() for rule in rules.split(",") if rule.strip()}
    return sorted(name for name in names if name.rpartition("-")[0] in wanted)
