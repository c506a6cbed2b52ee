"""An execution group's worker threads (flows-http.md item 3; seed 000 l.508).

Node code - a Compute's Python, selectors, parsing, every node's ``evaluate`` - runs on these
threads, never on the broker's event loop, so a slow or CPU-heavy flow cannot stall MQTT,
HTTP or another flow's I/O. Each flow deployed to the group reserves one thread per instance
(``1 + additional_instances``); the pool grows when a flow needs more threads than it has and
is shut down when the group's last flow stops.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class ExecutionGroup:
    def __init__(self, name: str) -> None:
        self.name = name
        self.workers = 0
        self._size = 0
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                raise RuntimeError(f"execution group {self.name!r} has no flow running")
            return self._executor

    def reserve(self, threads: int) -> None:
        """A flow starts with ``threads`` instances: make sure there is a thread for each."""
        with self._lock:
            self.workers += threads
            if self._executor is None or self.workers > self._size:
                old = self._executor
                self._size = self.workers
                self._executor = ThreadPoolExecutor(self._size, thread_name_prefix=f"relaymq-flows-{self.name}")
                if old is not None:
                    old.shutdown(wait=False)  # what it still runs finishes; new work goes to the new pool

    def release(self, threads: int) -> None:
        """A flow stopped: its threads are no longer needed (the pool stops with the last flow)."""
        with self._lock:
            self.workers = max(0, self.workers - threads)
            if self.workers == 0 and self._executor is not None:
                self._executor.shutdown(wait=False)
                self._executor = None
                self._size = 0
