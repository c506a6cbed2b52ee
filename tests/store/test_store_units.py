"""A unit of work's submissions (relaymq.store.engine: ``Engine.unit``, ``Engine.submit_item``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relaymq.store.batch import Batch
from relaymq.store.engine import Engine


def test_items_of_a_unit_join_the_batch_as_one_change_where_the_first_was_submitted(tmp_path: Path) -> None:
    """issue 14 (log append >= 200,000 msg/s: one submission per socket read): the items a
    unit submits with one change (the archive entries of a read's publications) reach the
    batch in one call of that change when the unit ends, in submission order, in the place of
    the first among the unit's other changes; nested units are the outer one; outside a unit
    an item is applied at once; each counts toward ``submitted`` (the broker's "did this
    publication store anything")."""
    engine = Engine(str(tmp_path / "relaymq.db"))
    calls: list[Any] = []

    def change(batch: Batch, items: list[int]) -> None:
        calls.append(list(items))

    def other(batch: Batch, tag: str) -> None:
        calls.append(tag)

    try:
        submitted = engine.submitted
        with engine.unit():
            engine.submit_item(change, 1)
            engine.submit(other, "between")
            engine.submit_item(change, 2, writes=2)
            with engine.unit():
                engine.submit_item(change, 3)
            assert calls == []
        assert calls == [[1, 2, 3], "between"]
        assert engine.submitted == submitted + 1 + 1 + 2 + 1
        engine.submit_item(change, 4)
        assert calls[-1] == [4]
        with engine.unit():
            engine.submit_item(change, 5)
        assert calls[-1] == [5]  # a new unit, a new list
    finally:
        engine.close()
