"""Property: whatever mix of puts, gets, two-phase gets, confirms, browse-locks and undos, the
visible messages are in priority-then-arrival order, and none is lost or doubled
(everyplace.md items 11, 13, 15, 17, 20)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.qmgr import QueueManager

from .helpers import body, text_message

OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from([0, 4, 9])),
    st.tuples(st.just("get"), st.just(0)),
    st.tuples(st.just("get2"), st.integers(1, 3)),
    st.tuples(st.just("lock"), st.integers(1, 3)),
    st.tuples(st.just("undo"), st.integers(1, 3)),
    st.tuples(st.just("confirm"), st.just(0)),
), max_size=60)


@settings(max_examples=100, deadline=None)
@given(OPS)
def test_visible_order_and_conservation(sequence) -> None:
    with QueueManager.open("QM1", None) as qm:
        qm.define_queue("Q")
        arrival: dict[str, int] = {}
        priority: dict[str, int] = {}
        held: dict[int, set[str]] = {}  # confirm id -> bodies hidden by a get or a lock
        unconfirmed: list[tuple[str, str, int]] = []  # (uid, body, confirm id) of two-phase gets
        gone: set[str] = set()
        for n, (op, arg) in enumerate(sequence):
            if op == "put":
                name = f"m{n}"
                qm.put("Q", text_message(name, arg))
                arrival[name], priority[name] = n, arg
            elif op == "get":
                got = qm.get("Q")
                if got is not None:
                    gone.add(body(got))
            elif op == "get2":
                env = qm.get_envelope("Q", confirm_id=arg)
                if env is not None:
                    held.setdefault(arg, set()).add(body(env.message))
                    unconfirmed.append((env.uid, body(env.message), arg))
            elif op == "lock":
                for env in qm.browse_and_lock("Q", confirm_id=arg, limit=1):
                    held.setdefault(arg, set()).add(body(env.message))
            elif op == "undo" and held.get(arg):
                assert qm.undo("Q", arg) == len(held.pop(arg))
                unconfirmed = [u for u in unconfirmed if u[2] != arg]
            elif op == "confirm" and unconfirmed:
                uid, name, cid = unconfirmed.pop(0)
                assert qm.confirm_get(uid) is True
                held[cid].discard(name)
                gone.add(name)
        hidden = {b for bs in held.values() for b in bs}
        expected = sorted((m for m in arrival if m not in gone and m not in hidden),
                          key=lambda m: (-priority[m], arrival[m]))
        assert [body(m) for m in qm.browse("Q")] == expected
        assert qm.depth("Q") == len(expected) + len(hidden)
