"""Child process for test_store_errors: write until the file size limit makes a commit fail.

RLIMIT_FSIZE makes every write past the limit fail with EFBIG, as a full disk fails with
ENOSPC, without needing a small filesystem. The limit is per process, hence a child. It prints
one JSON line describing what the store did; the parent checks it and the file.
"""

from __future__ import annotations

import json
import logging
import resource
import signal
import sys

from relaymq.store.base import StoredMessage, StoreError
from relaymq.store.sqlite import SQLiteStore


def main(path: str) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG from write() instead of dying
    acked: list[int] = []
    store = SQLiteStore(path, lambda callback: callback())
    store.flush()
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.RLIM_INFINITY))
    registered = 0
    refused: str | None = None
    for msg_id in range(1, 10_000):
        try:
            store.put_message(StoredMessage(msg_id, "t", b"x" * 4000, 1))
            store.on_durable(lambda msg_id=msg_id: acked.append(msg_id))
            registered += 1
            if msg_id % 4 == 0:
                store.flush()
        except StoreError as exc:
            refused = str(exc)
            break
    after: dict[str, str | None] = {}
    for name, call in (
        ("put", lambda: store.put_retained("t", 1)),
        ("on_durable", lambda: store.on_durable(lambda: acked.append(-1))),
        ("flush", store.flush),
        ("close", store.close),
    ):
        try:
            call()
            after[name] = None
        except StoreError as exc:
            after[name] = str(exc)
    print(json.dumps({
        "acked": acked,
        "registered": registered,
        "refused": refused,
        "failed": repr(store.failed),
        "after": after,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
