"""Who a channel peer is and what it may ask (docs/channels.md "Peer authentication"): the
principal of an anonymous peer, the request shown to the authority check, and which queue
managers an authenticated identity may speak for. Apart from the protocol
(relaymq.qmgr.channel), which a broker imports at its first channel connection, while these
are made when the channel listener starts (issue 16, bench/compare row 9).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

#: The principal of a peer that did not authenticate, on a channel that allows anonymous peers
#: ([qmgr] channel_allow_anonymous); None is a peer that is refused.
ANONYMOUS = ""


@dataclass(frozen=True)
class ChannelRequest:
    """What a channel peer asks of the queue manager, shown to the authority check before it
    is done: ``principal`` is who authenticated the connection (certificate CN, user of the
    channel or broker password file, or ANONYMOUS), ``peer`` the queue manager its HELLO named,
    ``operation`` one of put, get, browse (OPERATIONS), and ``qmgr``/``queue`` the object."""

    principal: str
    peer: str
    operation: str
    qmgr: str
    queue: str


#: ``authority(request)``: None when allowed, else the reason it is not.
Authority = Callable[[ChannelRequest], "str | None"]


class ChannelIdentities:
    """Which queue managers an authenticated channel peer may speak for (item 26: security
    hop by hop). The identity is what authenticated the connection - the CN of a client
    certificate on a listener that requires one, the user of the HTTP basic authentication
    on the HTTP route - and it may say HELLO as the queue manager of its own name, and as
    those ``[qmgr] channel_identities`` lists for it (a gateway certificate that serves
    several devices, a user name that is not a queue manager name)."""

    def __init__(self, extra: Mapping[str, Iterable[str]] | Iterable[tuple[str, Iterable[str]]] = ()) -> None:
        items = extra.items() if isinstance(extra, Mapping) else extra
        self.extra = {identity: frozenset(names) for identity, names in items}

    def allows(self, identity: str, qmgr: str) -> bool:
        return qmgr == identity or qmgr in self.extra.get(identity, ())

    def authorizer(self, identity: str | None, what: str) -> Callable[[str], str | None]:
        """For :class:`ChannelReceiver`: the refusal of a HELLO naming ``qmgr`` (None when
        allowed). ``what`` says what the identity is ("certificate CN", "HTTP user")."""

        def refusal(qmgr: str) -> str | None:
            if identity is None:
                return f"the connection has no {what}: it cannot speak for queue manager {qmgr!r}"
            if self.allows(identity, qmgr):
                return None
            return (f"{what} {identity!r} may not speak for queue manager {qmgr!r}"
                    " (it must be that name, or [qmgr] channel_identities must list it for the identity)")

        return refusal
