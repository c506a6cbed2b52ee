"""Errors: each a clear, documented error with its reason code, and nothing lost (issue 5,
"Failure behaviour"; everyplace.md items 5-8, 10, 14, 19; spec decision on confirms)."""

from __future__ import annotations

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr import errors as E
from relaymq.qmgr.definitions import make_definition

from .helpers import body, text_message


def test_put_beyond_max_depth_is_queue_full_and_keeps_the_rest(qm: QueueManager) -> None:
    """everyplace.md item 7 (max depth): the refused put stores nothing, the others stay."""
    qm.define_queue("Q", max_depth=2)
    qm.put("Q", text_message("1"))
    qm.put("Q", text_message("2"))
    with pytest.raises(E.QueueFull) as err:
        qm.put("Q", text_message("3"))
    assert err.value.reason == 2053 and "max_depth 2" in str(err.value)
    assert [body(m) for m in qm.browse("Q")] == ["1", "2"]


def test_put_beyond_max_message_size(qm: QueueManager) -> None:
    """everyplace.md item 7 (max message size, counted on the stored MQ-format bytes)."""
    small = len(text_message("").to_bytes())
    qm.define_queue("Q", max_message_size=small + 4)
    qm.put("Q", text_message("1234"))
    with pytest.raises(E.MessageTooBig) as err:
        qm.put("Q", text_message("12345"))
    assert err.value.reason == 2030
    assert qm.depth("Q") == 1


def test_unknown_queue_on_put_get_browse_depth(qm: QueueManager) -> None:
    """everyplace.md item 22: else fail; reason 2085."""
    for call in (lambda: qm.put("NOPE", text_message("x")), lambda: qm.get("NOPE"),
                 lambda: qm.browse("NOPE"), lambda: qm.depth("NOPE")):
        with pytest.raises(E.UnknownQueue) as err:
            call()
        assert err.value.reason == 2085 and "'NOPE'" in err.value.message


@pytest.mark.parametrize("name", ["bad name", "a/b", "é", "", "x#"])
def test_bad_names_are_refused(qm: QueueManager, name: str) -> None:
    """everyplace.md item 6: 0-9 a-z A-Z _ . % only; seed 004 l.510-521."""
    with pytest.raises(E.BadName) as err:
        qm.define_queue(name)
    assert err.value.reason == 2152
    with pytest.raises(E.BadName):
        QueueManager.open(name or " ", None)


def test_names_allow_the_seed_characters_and_any_length() -> None:
    """everyplace.md item 6: no length limit; '%', '.', '_' allowed; case sensitive."""
    with QueueManager.open("QM.a_1%", None) as qm:
        long = "q" * 500 + "._%"
        qm.define_queue(long)
        qm.define_queue("orders")
        qm.define_queue("ORDERS")
        assert {long, "orders", "ORDERS"} <= set(qm.queue_names())


def test_put_of_expired_message_is_refused(qm: QueueManager) -> None:
    """everyplace.md item 5: checked when a message is added; reason 2013; nothing stored."""
    from relaymq.qmgr import ExpireTime

    qm.define_queue("Q")
    with pytest.raises(E.MessageExpired) as err:
        qm.put("Q", text_message("old"), expire_time=ExpireTime(int(qm.clock() * 1000) - 1, absolute=True))
    assert err.value.reason == 2013
    assert qm.depth("Q") == 0


def test_confirm_of_unknown_uid_is_an_error(qm: QueueManager) -> None:
    """Spec decision (everyplace.md Decisions): a confirm whose message is not found is an
    error unless that UID is remembered as confirmed."""
    with pytest.raises(E.UnknownUID) as err:
        qm.confirm_put("QM7:1:1")
    assert err.value.reason == 3301
    with pytest.raises(E.UnknownUID):
        qm.confirm_get("QM7:1:1")


def test_operation_matrix_async_remote_only_put(qm: QueueManager) -> None:
    """everyplace.md item 10: async remote queues allow only put and confirmPut."""
    qm.define_queue("RQ", "remote", queue_manager="QM2", mode="async")
    qm.put("RQ", text_message("x"), qmgr="QM2")
    for call in (lambda: qm.get("RQ", qmgr="QM2"), lambda: qm.browse("RQ", qmgr="QM2")):
        with pytest.raises(E.NotAllowed) as err:
            call()
        assert err.value.reason == 2045


def test_sync_remote_without_connection_is_not_connected(qm: QueueManager) -> None:
    """everyplace.md item 8: a synchronous remote queue works only when connected."""
    qm.define_queue("RQ", "remote", queue_manager="QM2")
    with pytest.raises(E.NotConnected) as err:
        qm.put("RQ", text_message("x"), qmgr="QM2")
    assert err.value.reason == 2059


def test_delete_non_empty_queue_refused(qm: QueueManager) -> None:
    """Seed 004 l.366-368: the queue must be empty before it is deleted."""
    qm.define_queue("Q")
    qm.put("Q", text_message("x"))
    with pytest.raises(E.QueueNotEmpty):
        qm.delete_queue("Q")
    assert qm.depth("Q") == 1
    qm.delete_queue("Q", purge=True)
    assert "Q" not in qm.queue_names()


def test_define_twice_and_alias_clash(qm: QueueManager) -> None:
    """everyplace.md item 9: an alias may not shadow a queue."""
    qm.define_queue("Q", aliases=["A"])
    with pytest.raises(E.QueueExists):
        qm.define_queue("Q")
    with pytest.raises(E.QueueExists):
        qm.define_queue("A")


@pytest.mark.parametrize("props", [{"max_depth": -2}, {"default_priority": 10}, {"mode": "async"},
                                   {"expiry": "soon"}, {"colour": "blue"}])
def test_bad_properties(props: dict) -> None:
    """everyplace.md item 7: properties checked per type when defined."""
    with pytest.raises(E.BadProperty) as err:
        make_definition("Q", "local", "QM1", **props)
    assert err.value.reason == 3306


def test_bad_selector(qm: QueueManager) -> None:
    """spec README decision 3: an invalid expression is reported where it is given."""
    qm.define_queue("Q")
    with pytest.raises(E.BadSelector):
        qm.browse("Q", selector="a = = 1")


def test_every_error_has_distinct_reason() -> None:
    """docs/queues.md lists each error's reason code; they must not collide."""
    reasons = [cls.reason for cls in E.ALL_ERRORS]
    assert len(reasons) == len(set(reasons))
    assert all(issubclass(cls, E.QueueError) for cls in E.ALL_ERRORS)
