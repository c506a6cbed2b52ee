"""The durable store (issue 5 step 1; spec README decision 4: durable before acknowledged,
group commit; everyplace.md item 31: disk store with fsync on write)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from relaymq.qmgr import QueueManager
from relaymq.qmgr.errors import StoreFailed
from relaymq.qmgr.sqlite_store import SqliteQueueStore, store_path

from .helpers import body, text_message


def test_file_location_and_reopen_keeps_everything(tmp_path) -> None:
    """issue 5: <data_dir>/qmgr-<NAME>.db; definitions, messages, order and states survive."""
    with QueueManager.open("QMX", str(tmp_path), synchronous="NORMAL") as qm:
        qm.define_queue("Q", max_depth=50, aliases=["QA"])
        for text, prio in [("a", 1), ("b", 7), ("c", 1)]:
            qm.put("Q", text_message(text, prio))
        qm.put("Q", text_message("pending", 1), uid="R:1", confirm_id=3)
        (locked,) = qm.browse_and_lock("Q", confirm_id=4, limit=1)
    assert os.path.exists(tmp_path / "qmgr-QMX.db")
    with QueueManager.open("QMX", str(tmp_path), synchronous="NORMAL") as qm:
        assert qm.queue("QA").max_depth == 50
        assert [body(m) for m in qm.browse("Q")] == ["a", "c"]  # b still locked
        qm.unlock("Q", locked.uid, locked.lock_id)
        qm.confirm_put("R:1")
        assert [body(qm.get("Q")) for _ in range(4)] == ["b", "a", "c", "pending"]
        new_id = qm.put("Q", text_message("z"))
        assert qm.browse_envelopes("Q")[0].msg_id == new_id


def test_every_acknowledged_put_survives_sigkill(tmp_path) -> None:
    """spec README decision 4: a put is durable when it returns. A child process puts and
    prints each MsgId after put returns; it is killed with SIGKILL mid-stream; every printed
    MsgId is on the queue after reopening, once."""
    script = textwrap.dedent(f"""
        import sys
        from relaymq.qmgr import QueueManager
        from relaymq.message import Message
        qm = QueueManager.open("QMK", {str(tmp_path)!r}, synchronous="FULL")
        qm.define_queue("Q")
        i = 0
        while True:
            m = Message(); m.mq.body = str(i).encode()
            print(qm.put("Q", m).hex(), flush=True)
            i += 1
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    acked = []
    assert child.stdout is not None
    for line in child.stdout:
        acked.append(bytes.fromhex(line.strip()))
        if len(acked) == 40:
            child.send_signal(signal.SIGKILL)
            break
    child.wait(30)
    with QueueManager.open("QMK", str(tmp_path)) as qm:
        envelopes = qm.browse_envelopes("Q")
    ids = [e.msg_id for e in envelopes]
    numbers = [int(body(e.message)) for e in envelopes]
    assert len(ids) == len(set(ids))
    assert set(acked) <= set(ids)
    assert numbers == list(range(len(numbers)))  # FIFO, no gap, no duplicate


def test_group_commit_under_concurrent_puts(tmp_path) -> None:
    """spec README decision 4 / design guide: several pending operations share one commit."""
    qm = QueueManager.open("QMG", str(tmp_path), synchronous="FULL")
    qm.define_queue("Q")
    start = qm.store.commits
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(25):
            qm.put("Q", text_message(f"{n}-{i}"))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    commits = qm.store.commits - start
    assert qm.depth("Q") == 200
    assert commits < 200
    qm.close()


def test_failed_store_acknowledges_nothing(tmp_path) -> None:
    """spec README decision 4: when the store cannot write, the put fails (StoreFailed, 2102)
    and the message is not left in memory as if stored."""
    qm = QueueManager.open("QMF", str(tmp_path), synchronous="NORMAL")
    qm.define_queue("Q")
    import sqlite3

    broken = sqlite3.connect(qm.store.path, isolation_level=None)
    broken.execute("DROP TABLE qm_messages")  # simulate a broken database
    broken.close()
    with pytest.raises(StoreFailed) as err:
        qm.put("Q", text_message("lost?"))
    assert err.value.reason == 2102
    assert qm.depth("Q") == 0
    with pytest.raises(StoreFailed):
        qm.put("Q", text_message("again"))
    qm.close()


def test_foreign_sqlite_file_refused(tmp_path) -> None:
    """A database that is not a queue manager store is refused, not overwritten."""
    import sqlite3

    path = store_path(str(tmp_path), "QM1")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE other (x)")
    db.commit()
    db.close()
    with pytest.raises(StoreFailed):
        SqliteQueueStore(path)


def test_second_process_on_a_store_is_refused_until_the_holder_dies(tmp_path, capsys) -> None:
    """Issue 5 P2 ("a crash ... loses no message", no message delivered twice): while a
    process holds queue manager QMH's store, another process (here this one; the CLI with
    --data-dir too) is refused with MQRC_OBJECT_IN_USE naming the holder's pid, instead of
    building a second in-memory index of the same messages. SIGKILL of the holder frees it."""
    from relaymq.cli.main import main
    from relaymq.qmgr.errors import StoreInUse

    script = textwrap.dedent(f"""
        import sys, time
        from relaymq.qmgr import QueueManager
        qm = QueueManager.open("QMH", {str(tmp_path)!r}, synchronous="NORMAL")
        qm.define_queue("Q")
        print("ready", flush=True)
        time.sleep(120)
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreInUse) as refused:
            QueueManager.open("QMH", str(tmp_path))
        assert refused.value.reason == 2042 and f"pid {holder.pid}" in str(refused.value)
        assert "QMH's store is in use by another process" in str(refused.value)
        code = main(["queue", "put", "Q", "-m", "x", "--data-dir", str(tmp_path), "--qmgr", "QMH"])
        err = capsys.readouterr().err
        assert code == 1 and len(err.strip().splitlines()) == 1
        assert f"store is in use by another process (pid {holder.pid}); use --url" in err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    with QueueManager.open("QMH", str(tmp_path)) as qm:  # a crash leaves no stale lock
        assert qm.depth("Q") == 0


def test_one_process_cannot_open_a_store_twice(tmp_path) -> None:
    """The lock is per open store, so the same process opening QMD twice is refused too, and
    a closed store can be opened again."""
    from relaymq.qmgr.errors import StoreInUse

    first = QueueManager.open("QMD", str(tmp_path), synchronous="NORMAL")
    with pytest.raises(StoreInUse):
        QueueManager.open("QMD", str(tmp_path), synchronous="NORMAL")
    first.close()
    QueueManager.open("QMD", str(tmp_path), synchronous="NORMAL").close()


def test_delete_queue_manager_removes_definitions_and_keeps_data(tmp_path) -> None:
    """everyplace.md item 28 (seed l.1736-1760): deleting a queue manager deletes its queue
    definitions, the system queues' too, and it can no longer be run; the messages are kept
    (inaccessible). recreate=True makes a new one of that name; a queue defined again with
    the old name has its messages back at the next start. state follows the life cycle."""
    from relaymq.qmgr.errors import QueueManagerClosed, QueueManagerDeleted

    qm = QueueManager.open("QMDEL", str(tmp_path), synchronous="NORMAL")
    qm.define_queue("ORDERS")
    qm.put("ORDERS", text_message("kept"))
    assert qm.state == "running"
    qm.delete_queue_manager()
    assert qm.state == "ended"
    with pytest.raises(QueueManagerClosed):
        qm.put("ORDERS", text_message("after"))
    with pytest.raises(QueueManagerDeleted) as deleted:
        QueueManager.open("QMDEL", str(tmp_path))
    assert "was deleted" in str(deleted.value) and deleted.value.reason == 2058
    with QueueManager.open("QMDEL", str(tmp_path), recreate=True) as again:
        assert "ORDERS" not in again.queue_names() and "SYSTEM.DEFAULT.LOCAL.QUEUE" in again.queue_names()
        again.define_queue("ORDERS")
    with QueueManager.open("QMDEL", str(tmp_path)) as later:
        assert [body(m) for m in later.browse("ORDERS")] == ["kept"]


@pytest.mark.parametrize("durable", [True, False])
def test_put_all_makes_each_put_in_one_submission_and_reports_each_refusal(tmp_path, durable) -> None:
    """issue 14: the copies of a publication for queue subscribers go to the queue manager in
    one call (``put_all``): each is put as ``put(wait=False)`` puts it, a refused one (queue
    full, unknown queue) is reported in its place and the others are still made, in order;
    they are on disk once the store has committed (reopen)."""
    with QueueManager.open("QMB", str(tmp_path) if durable else None, synchronous="NORMAL") as qm:
        qm.define_queue("A")
        qm.define_queue("B", max_depth=1)
        results = qm.put_all([("A", text_message("a1")), ("B", text_message("b1")), ("B", text_message("b2")),
                              ("NOPE", text_message("x")), ("A", text_message("a2"))])
        assert [type(r).__name__ for r in results] == ["bytes", "bytes", "QueueFull", "UnknownQueue", "bytes"]
        assert [body(m) for m in qm.browse("A")] == ["a1", "a2"] and [body(m) for m in qm.browse("B")] == ["b1"]
    if durable:
        with QueueManager.open("QMB", str(tmp_path), synchronous="NORMAL") as qm:
            assert [e.msg_id for e in qm.browse_envelopes("A")] == [results[0], results[4]]
            assert [body(qm.get("B"))] == ["b1"] and qm.depth("B") == 0
