"""The ranges of message ids a restored backlog's unlisted chunks keep (relaymq.broker.pins,
issue 16 row 9): whatever order ranges come and go in, an id is kept exactly when some live
range covers it, and the bounds are those of the live ranges. Checked against a plain list."""

from __future__ import annotations

import random

import pytest

from relaymq.broker.pins import Pins


def _brute(ranges: list[tuple[int, int]], msg_id: int) -> bool:
    return any(low <= msg_id <= high for low, high in ranges)


@pytest.mark.parametrize("seed", range(8))
def test_pins_answer_as_a_scan_of_every_range_would(seed: int) -> None:
    rng = random.Random(seed)
    pins, ranges = Pins(), []
    for step in range(600):
        action = rng.random()
        if action < 0.45 or not ranges:
            low = rng.randrange(1, 500)
            high = low + rng.randrange(0, 60)  # overlapping, interleaved, repeated ranges
            pins.add(low, high)
            ranges.append((low, high))
        elif action < 0.8:
            low, high = ranges.pop(rng.randrange(len(ranges)))
            pins.remove(low, high)
        for msg_id in (rng.randrange(0, 600) for _ in range(5)):
            assert pins.covers(msg_id) == _brute(ranges, msg_id), (step, msg_id)
        expected = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else (1, 0)
        assert pins.bounds() == expected
        assert len(pins) == len(ranges) and pins.ranges() == sorted(ranges)


def test_a_range_pinned_twice_stays_until_both_pins_go() -> None:
    pins = Pins()
    pins.add(10, 20)
    pins.add(10, 20)
    pins.remove(10, 20)
    assert pins.covers(15) and pins.bounds() == (10, 20)
    pins.remove(10, 20)
    assert not pins.covers(15) and pins.bounds() == (1, 0)
    with pytest.raises(ValueError):
        pins.remove(10, 20)
