"""Child process for test_store_errors: write until the file size limit makes a commit fail.

RLIMIT_FSIZE makes every write past the limit fail with EFBIG, as a full disk fails with
ENOSPC, without needing a small filesystem. The limit is per process, hence a child. It prints
one JSON line describing what the store did; the parent checks it and the file.

``python disk_full_child.py PATH recover``: once commits fail, go on submitting for a while,
then lift the limit ("space returns") and wait until everything is acknowledged.
``python disk_full_child.py PATH close``: close the store while commits still fail.
"""

from __future__ import annotations

import json
import logging
import resource
import signal
import sys
import time

from relaymq.store.base import StoredMessage, StoreError, StoreUnavailable
from relaymq.store.sqlite import SQLiteStore

LIMIT = 256 * 1024
WAIT = 60.0  # for the store to reach a state; never reached on a sound engine


def wait_until(condition, what: str) -> None:  # noqa: ANN001
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting until {what}")
        time.sleep(0.01)


def main(path: str, mode: str) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG from write() instead of dying
    acked: list[int] = []
    store = SQLiteStore(path, lambda callback: callback())
    store.flush()
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, resource.RLIM_INFINITY))

    def put(msg_id: int) -> None:
        store.put_message(StoredMessage(msg_id, "t", b"x" * 4000, 1))
        store.on_durable(lambda: acked.append(msg_id))

    msg_id = 0
    unavailable: str | None = None
    while unavailable is None and msg_id < 10_000:
        msg_id += 1
        put(msg_id)
        if msg_id % 4 == 0:
            try:
                store.flush()
            except StoreUnavailable as exc:
                unavailable = str(exc)
    failing_at = msg_id
    acked_when_failing = len(acked)
    # While it fails: submissions are taken, nothing more is acknowledged, retries go on.
    retries = store.write_retry_count
    for _ in range(20):
        msg_id += 1
        put(msg_id)
    wait_until(lambda: store.write_retry_count >= retries + 3, "three more tries")
    acked_during = len(acked) - acked_when_failing
    state_during = repr(store.write_error)
    closed: str | None = None
    if mode == "recover":
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        wait_until(lambda: store.write_error is None, "the store writes again")
        msg_id += 1
        put(msg_id)
        store.flush()
    try:
        store.close()
    except StoreError as exc:
        closed = str(exc)
    print(json.dumps({
        "mode": mode,
        "unavailable": unavailable,
        "failing_at": failing_at,
        "acked_when_failing": acked_when_failing,
        "acked_during": acked_during,
        "state_during": state_during,
        "submitted": msg_id,
        "acked": acked,
        "outages": store.write_outage_count,
        "failed": repr(store.failed),
        "close_error": closed,
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
