"""A TCP proxy for channel failure tests: it parses the channel frames the caller sends and,
now and then, cuts the connection in the middle of a PUT frame (mid-transfer) or right after
forwarding a CONFIRM frame (mid-confirm: the confirm arrives, its answer is lost). It runs
its own event loop in a thread, so it serves tests in any process layout."""

from __future__ import annotations

import asyncio
import random
import threading
import time


class CuttingProxy:
    """A TCP proxy that parses channel frames from the caller and, now and then, closes both
    sides right after forwarding part of a PUT frame or a whole CONFIRM frame."""

    PUT, CONFIRM = 3, 5

    def __init__(self, target_port: int, rng: random.Random, cut_probability: float,
                 plan: tuple[str, ...] = ()) -> None:
        """``plan``: cuts to make first, in order ("put" or "confirm"), each at the next
        frame of that kind, so a test knows both kinds happen; then cuts are random."""
        self.target_port = target_port
        self.rng = rng
        self.cut_probability = cut_probability
        self.plan = list(plan)
        self.cuts = {"put": 0, "confirm": 0}
        #: (kind, time.monotonic()) of every cut, so a test can see when faults happened.
        self.cut_times: list[tuple[str, float]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.port = 0
        self.enabled = True

    def start(self) -> CuttingProxy:
        self.thread.start()

        async def listen() -> int:
            self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            return self.server.sockets[0].getsockname()[1]

        self.port = asyncio.run_coroutine_threadsafe(listen(), self.loop).result(10)
        return self

    def close(self) -> None:
        async def shut() -> None:
            self.server.close()

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return

        async def downstream() -> None:
            try:
                while data := await up_reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        back = asyncio.ensure_future(downstream())
        try:
            while True:
                head = await reader.readexactly(5)
                length, kind = int.from_bytes(head[:4], "big"), head[4]
                rest = await reader.readexactly(length - 1)
                frame = head + rest
                name = {self.PUT: "put", self.CONFIRM: "confirm"}.get(kind)
                planned = self.enabled and bool(self.plan) and self.plan[0] == name
                if planned:
                    self.plan.pop(0)
                if self.enabled and name and (planned or self.rng.random() < self.cut_probability):
                    if kind == self.PUT:
                        up_writer.write(frame[: self.rng.randrange(1, len(frame))])  # mid-transfer
                    else:
                        up_writer.write(frame)  # the confirm arrives; its answer is lost
                    self.cuts[name] += 1
                    self.cut_times.append((name, time.monotonic()))
                    await up_writer.drain()
                    break
                up_writer.write(frame)
                await up_writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            up_writer.close()
            writer.close()
            back.cancel()
