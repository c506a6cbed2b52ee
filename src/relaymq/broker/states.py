"""A client connection's states and the events that move it between them, in one table (the
design guide's "h11's state table"; h11's ``_state.py``). No I/O and no broker state here:
``Connection.move`` looks a transition up and applies it.

::

    state             event            next state
    AWAITING_CONNECT  CHECK_PASSWORD   AUTHENTICATING   CONNECT read; its password is checked off the loop
    AWAITING_CONNECT  ACCEPT           CONNECTED        CONNECT accepted at once (no password to check)
    AWAITING_CONNECT  CLOSE            REFUSED          refused, malformed, timed out, over max_connections
    AUTHENTICATING    ACCEPT           CONNECTED        the password was right
    AUTHENTICATING    CLOSE            REFUSED          the password was wrong, or the client left
    CONNECTED         CLOSE            CLOSED           DISCONNECT, take-over, keep-alive, protocol error, I/O

What each state reads (``Connection.dispatch``): AWAITING_CONNECT a CONNECT and nothing else;
AUTHENTICATING nothing (reading is paused until the check answers, the packets that follow the
CONNECT wait in the reader); CONNECTED every packet a client may send but CONNECT, each handler
given the connection's ``Session`` (``Connection.handle_in_session``); REFUSED and CLOSED
nothing. The session is set by ACCEPT and only by it, so a handler reachable in CONNECTED
always has one.

``Connection.connected`` and ``Connection.closed`` are views of the state (:data:`FLAGS`),
written only with it: ``connected`` says a CONNECT was accepted (it stays true once the
connection closed: the will and the session are handled on close only then), ``closed`` that
nothing more is read or written.
"""

from __future__ import annotations

from enum import Enum


class State(Enum):
    AWAITING_CONNECT = "awaiting CONNECT"
    AUTHENTICATING = "authenticating"
    CONNECTED = "connected"
    REFUSED = "refused"  # closed before a CONNECT was accepted: no session, no will
    CLOSED = "closed"  # closed after its CONNECT was accepted


class Event(Enum):
    CHECK_PASSWORD = "check password"
    ACCEPT = "accept"
    CLOSE = "close"


AWAITING_CONNECT = State.AWAITING_CONNECT
AUTHENTICATING = State.AUTHENTICATING
CONNECTED = State.CONNECTED
REFUSED = State.REFUSED
CLOSED = State.CLOSED

CHECK_PASSWORD = Event.CHECK_PASSWORD
ACCEPT = Event.ACCEPT
CLOSE = Event.CLOSE

#: state -> event -> next state; an event not listed for a state is a bug (StateError).
TRANSITIONS: dict[State, dict[Event, State]] = {
    AWAITING_CONNECT: {CHECK_PASSWORD: AUTHENTICATING, ACCEPT: CONNECTED, CLOSE: REFUSED},
    AUTHENTICATING: {ACCEPT: CONNECTED, CLOSE: REFUSED},
    CONNECTED: {CLOSE: CLOSED},
    REFUSED: {},
    CLOSED: {},
}

#: state -> (Connection.connected, Connection.closed)
FLAGS: dict[State, tuple[bool, bool]] = {
    AWAITING_CONNECT: (False, False),
    AUTHENTICATING: (False, False),
    CONNECTED: (True, False),
    REFUSED: (False, True),
    CLOSED: (True, True),
}


class StateError(RuntimeError):
    """An event the current state does not allow: a bug in the broker, not in the client."""


def next_state(state: State, event: Event) -> State:
    """The state ``event`` moves ``state`` to (:data:`TRANSITIONS`)."""
    try:
        return TRANSITIONS[state][event]
    except KeyError:
        raise StateError(f"{event.value!r} is not allowed in state {state.value!r}") from None
