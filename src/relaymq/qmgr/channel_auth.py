"""Who a channel peer is (issue 15 finding 1; docs/channels.md "Peer authentication").

A peer authenticates in one of three ways, checked in this order:

1. a TLS client certificate the listener verified (``[qmgr] channel_tls_ca``): the principal is
   the certificate's subject CN;
2. a user and password - in its HELLO over TCP, or HTTP basic authentication on the HTTP
   adapter's route - of ``[qmgr] channel_password_file`` (one line per peer queue manager, the
   password file's format: bcrypt hashes written by ``relaymq passwd``) or of the broker's
   ``[access] password_file``: the principal is that user name;
3. nothing: the principal is :data:`ANONYMOUS` when ``[qmgr] channel_allow_anonymous`` is true,
   and the peer is refused otherwise.

Credentials that are sent must be right even where anonymous access is allowed (a typo should
fail loudly, not connect anonymously). The bcrypt checks are slow on purpose, so
:meth:`ChannelAuthenticator.authenticate` is called off the event loop, on the channel's own
small pool (relaymq.qmgr.channel_transport): a flood of wrong passwords must not take the
threads the REST interface and the queue manager calls use.

No sockets here: the transport hands over what it saw (the certificate's CN, the credentials).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from relaymq.auth.authorities import ANONYMOUS as ANONYMOUS_PRINCIPAL
from relaymq.auth.authorities import qmgr_principal
from relaymq.qmgr.channel_peers import ANONYMOUS, Authority, ChannelIdentities, ChannelRequest
from relaymq.qmgr.errors import NotAuthorized

__all__ = ["ANONYMOUS", "ChannelAuthenticator"]


class ChannelAuthenticator:
    """The authentication rules of one queue manager's channel entrances (TCP listener and
    HTTP route)."""

    def __init__(self, *, peers: Any | None = None, users: Any | None = None, allow_anonymous: bool = False,
                 identities: ChannelIdentities | None = None, trusted_context: Iterable[str] = ()) -> None:
        """``peers``: the PasswordFile of the peer queue managers' shared credentials;
        ``users``: the broker's PasswordFile; ``identities``: which queue managers a principal
        may speak for besides the one of its own name; ``trusted_context``: principals whose
        messages keep their MQMD.UserIdentifier (queue managers that authenticate their own
        users, IBM MQ's PUTAUT(CTX)); every other peer's messages get its principal."""
        self.peers = peers
        self.users = users
        self.allow_anonymous = allow_anonymous
        self.identities = identities or ChannelIdentities()
        self.trusted_context = frozenset(trusted_context)

    @classmethod
    def anonymous(cls) -> ChannelAuthenticator:
        """Anybody may connect and speak for any queue manager: only for a channel that
        something else guards (tests, an embedded device behind its own network)."""
        return cls(allow_anonymous=True)

    def authenticate(self, certificate: str | None = None,
                     credentials: tuple[str, bytes] | None = None) -> str | None:
        """The principal of a peer, None when it is refused. Blocking (bcrypt)."""
        if certificate:
            return certificate
        if credentials is not None:
            user, password = credentials
            for passwords in (self.peers, self.users):
                if passwords is not None and user in passwords:
                    return user if passwords.check(user, password) else None
            if self.peers is not None:  # the same bcrypt work for an unknown name: no user probing
                self.peers.check(user, password)
            elif self.users is not None:
                self.users.check(user, password)
            return None
        return ANONYMOUS if self.allow_anonymous else None

    def model_principal(self, principal: str) -> str:
        """The principal of the authorisation model (relaymq.auth.authorities) that a channel
        principal is: a peer queue manager of ``channel_password_file`` is ``qmgr:NAME``, an
        anonymous peer the model's anonymous principal, a certificate or broker user itself."""
        if principal == ANONYMOUS:
            return ANONYMOUS_PRINCIPAL
        if self.peers is not None and principal in self.peers:
            return qmgr_principal(principal)
        return principal

    def authority(self, qm: Any) -> Authority:
        """The check each channel request passes (issue 15: a peer acts with its own, limited
        authority): ``qm.authorize`` with the peer's principal in the authorisation model."""
        def check(request: ChannelRequest) -> str | None:
            try:
                qm.authorize(self.model_principal(request.principal), request.operation, request.queue,
                             qmgr=request.qmgr)
            except NotAuthorized as exc:
                return str(exc)
            return None

        return check

    def keeps_context(self, principal: str | None) -> bool:
        """Do messages from ``principal`` keep their MQMD.UserIdentifier? Never an anonymous
        peer's."""
        return bool(principal) and principal in self.trusted_context

    def speaks_for(self, principal: str, what: str) -> Callable[[str], str | None] | None:
        """For ChannelReceiver(authorize=...): which queue managers ``principal`` may name in
        its HELLO; None (any) for an anonymous peer, which can only be there when allowed."""
        if principal == ANONYMOUS:
            return None
        return self.identities.authorizer(principal, what)
