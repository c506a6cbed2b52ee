"""One real-time client's protocol state. No I/O.

``on_bytes`` takes what the socket read and returns what the broker must do (``Publish`` on a
topic, ``Subscribe``/``Unsubscribe`` a filter); what goes back to the client is queued in
``out`` (``relaymq.realtime.outqueue``: the overflow policy) for the connection to write.
``tick`` drives the broker's pings (brokerPingInterval, seed l.2040-2050): a PING every
interval, and a client that has sent nothing for three intervals is closed; a connection
without its HELLO after ``HELLO_TIMEOUT`` is closed too. ``closed`` holds
the CLOSE (reason and text) once the session ended: a frame over the maximum message size
(seed l.2052-2058), a protocol error, a ping timeout, or the client's own CLOSE.
"""

from __future__ import annotations

from relaymq.pubsub.topics import TopicError, reserved_for_broker, validate_topic_filter, validate_topic_name
from relaymq.realtime import frames
from relaymq.realtime.frames import Ack, Close, Frame, Hello, Ping, Publish, Subscribe, Welcome
from relaymq.realtime.outqueue import HIGH, NORMAL, RESPONSE, OutQueue
from relaymq.realtime.settings import RealtimeSettings

#: Intervals without a frame from the client before it is closed.
PING_MISSES = 3
#: Seconds a new connection has to send its HELLO (pings or not), so idle sockets do not pile up.
HELLO_TIMEOUT = 10.0


class Session:
    def __init__(self, settings: RealtimeSettings, peer: str, now: float) -> None:
        self.settings = settings
        self.peer = peer
        self.reader = frames.FrameReader(settings.max_message_size)
        self.out = OutQueue(settings.max_broker_queue_size)
        self.client_id: str | None = None
        self.filters: set[str] = set()
        self.closed: Close | None = None
        self.last_heard = now
        self.started = now
        self.next_ping = now + settings.broker_ping_interval / 1000
        self._token = 0

    def on_bytes(self, data: bytes, now: float) -> list[Frame]:
        """The broker's work for these bytes: ``Publish`` and ``Subscribe`` frames, checked."""
        if self.closed is not None:
            return []
        self.last_heard = now
        try:
            incoming = self.reader.feed(data)
        except frames.FrameTooLarge as error:
            self._close(frames.TOO_LARGE, str(error))
            return []
        except frames.FrameError as error:
            self._close(frames.PROTOCOL_ERROR, str(error))
            return []
        work: list[Frame] = []
        for frame in incoming:
            if self.closed is not None:
                break
            work += self._handle(frame)
        return work

    def _handle(self, frame: Frame) -> list[Frame]:
        if self.client_id is None:
            if not isinstance(frame, Hello) or frame.version != frames.VERSION:
                self._close(frames.PROTOCOL_ERROR, "HELLO (version 1) must come first")
                return []
            self.client_id = frame.client_id or f"rt-{self.peer}"
            s = self.settings
            self.send(Welcome(s.broker_ping_interval, s.max_message_size, s.max_broker_queue_size), RESPONSE)
            return []
        if isinstance(frame, Subscribe):
            return self._subscribe(frame)
        if isinstance(frame, Publish):
            try:
                validate_topic_name(frame.topic)
            except TopicError as error:
                self._close(frames.PROTOCOL_ERROR, str(error))
                return []
            return [] if reserved_for_broker(frame.topic) else [frame]
        if isinstance(frame, Ping):
            if not frame.pong:
                self.send(Ping(frame.token, pong=True), RESPONSE)
            return []
        if isinstance(frame, Close):
            self._close(frames.NORMAL, "closed by the client")
            return []
        self._close(frames.PROTOCOL_ERROR, f"unexpected {type(frame).__name__} from a client")
        return []

    def _subscribe(self, frame: Subscribe) -> list[Frame]:
        try:
            validate_topic_filter(frame.topic_filter)
        except TopicError as error:
            self.send(Ack(frame.request, False, str(error), frame.unsubscribe), RESPONSE)
            return []
        if frame.unsubscribe:
            self.filters.discard(frame.topic_filter)
        else:
            self.filters.add(frame.topic_filter)
        self.send(Ack(frame.request, True, "", frame.unsubscribe), RESPONSE)
        return [frame]

    def deliver(self, publish: Publish) -> None:
        """A publication for this client, queued under the overflow policy."""
        if self.closed is None:
            kind = RESPONSE if publish.response else HIGH if publish.priority >= frames.HIGH_PRIORITY else NORMAL
            self.send(publish, kind)

    def send(self, frame: Frame, kind: int) -> None:
        self.out.push(frames.encode(frame), kind)

    def tick(self, now: float) -> None:
        if self.closed is None and self.client_id is None and now - self.started > HELLO_TIMEOUT:
            self._close(frames.PROTOCOL_ERROR, f"no HELLO within {HELLO_TIMEOUT:g} seconds")
        interval = self.settings.broker_ping_interval / 1000
        if not interval or self.closed is not None or self.client_id is None:
            return
        if now - self.last_heard > PING_MISSES * interval:
            self._close(frames.PING_TIMEOUT, f"nothing from the client for {PING_MISSES} ping intervals")
        elif now >= self.next_ping:
            self._token += 1
            self.send(Ping(self._token), RESPONSE)
            self.next_ping = now + interval

    def _close(self, reason: int, text: str) -> None:
        self.closed = Close(reason, text)
        self.send(self.closed, RESPONSE)
