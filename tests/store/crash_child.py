"""Child process for test_store_crash: write messages forever, print each id once it is durable.

The id is printed only from its on_durable callback, so every line the parent reads is an
acknowledgement the broker would have sent. At most WINDOW messages are unacknowledged at any
time (as a receive maximum would bound them), so the parent's SIGKILL lands among many small
commits rather than at the end of one huge batch.
"""

from __future__ import annotations

import sys
import threading

from relaymq.store.base import DeliveryRecord, StoredMessage
from relaymq.store.sqlite import SQLiteStore

WINDOW = 32


def main(path: str) -> None:
    window = threading.Semaphore(WINDOW)

    def acknowledge(msg_id: int) -> None:
        sys.stdout.write(f"{msg_id}\n")
        sys.stdout.flush()
        window.release()

    store = SQLiteStore(path, lambda callback: callback())
    msg_id = 0
    while True:
        window.acquire()
        msg_id += 1
        store.put_message(StoredMessage(msg_id, f"crash/{msg_id}", msg_id.to_bytes(4, "big") * 64, 1))
        store.put_delivery(DeliveryRecord("subscriber", msg_id, msg_id, 1))
        store.on_durable(lambda msg_id=msg_id: acknowledge(msg_id))


if __name__ == "__main__":
    main(sys.argv[1])
