"""Errors of the queue manager, each with a reason code and a one-line message.

Why reason codes: the REST interface, the channel protocol and the command line each map an
error to their own shape (HTTP status, a frame, an exit status); a code travels unchanged from
here to there (design guide, "Errors carry reason codes"). Where IBM MQ has a reason code for
the same condition its number is used (``MQRC_*`` from ``cmqc.h``), so an MQ user recognises
it; conditions MQ Everyplace has and MQ does not (UIDs, confirms, rules) use 3300-3399.
"""

from __future__ import annotations


class QueueError(Exception):
    """Base of every queue manager error: ``reason`` (int) and ``message`` (one line)."""

    reason: int = 2195  # MQRC_UNEXPECTED_ERROR
    name: str = "MQRC_UNEXPECTED_ERROR"

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.message} (reason {self.reason} {self.name})"


def _error(class_name: str, reason: int, name: str, doc: str) -> type[QueueError]:
    return type(class_name, (QueueError,), {"reason": reason, "name": name, "__doc__": doc})


UnknownQueue = _error("UnknownQueue", 2085, "MQRC_UNKNOWN_OBJECT_NAME",
                      "No queue (or alias) of that name on that queue manager (everyplace.md item 22).")
UnknownQueueManager = _error("UnknownQueueManager", 2087, "MQRC_UNKNOWN_REMOTE_Q_MGR",
                             "The destination queue manager cannot be resolved (item 22: else fail).")
QueueFull = _error("QueueFull", 2053, "MQRC_Q_FULL",
                   "The queue holds max_depth messages already (item 7); the put stored nothing.")
MessageTooBig = _error("MessageTooBig", 2030, "MQRC_MSG_TOO_BIG_FOR_Q",
                       "The message is longer than the queue's max_message_size (item 7).")
BadName = _error("BadName", 2152, "MQRC_OBJECT_NAME_ERROR",
                 "A queue or queue manager name with a character outside 0-9 a-z A-Z _ . % (item 6).")
MessageExpired = _error("MessageExpired", 2013, "MQRC_EXPIRY_ERROR",
                        "The message had already expired when it was put (item 5); it was not stored.")
NoMessage = _error("NoMessage", 2033, "MQRC_NO_MSG_AVAILABLE",
                   "No message matches (item 14): a delete/unlock/confirm of a UID not in that state.")
QueueExists = _error("QueueExists", 2100, "MQRC_OBJECT_ALREADY_EXISTS",
                     "define_queue of a name that is already defined (or is an alias).")
QueueNotEmpty = _error("QueueNotEmpty", 2055, "MQRC_Q_NOT_EMPTY",
                       "delete_queue of a queue that still holds messages (seed 004 l.366-368).")
NotAllowed = _error("NotAllowed", 2045, "MQRC_OPTION_NOT_VALID_FOR_TYPE",
                    "The operation is not possible on this queue type (item 10 operation matrix).")
NotConnected = _error("NotConnected", 2059, "MQRC_Q_MGR_NOT_AVAILABLE",
                      "A synchronous remote queue was used with no connection to its queue manager (item 8).")
QueueManagerClosed = _error("QueueManagerClosed", 2162, "MQRC_Q_MGR_STOPPING",
                            "The queue manager is stopping or closed.")
QueueManagerDeleted = _error("QueueManagerDeleted", 2058, "MQRC_Q_MGR_NAME_ERROR",
                             "The queue manager was deleted (item 28): its definitions are gone, its data kept.")
BadSelector = _error("BadSelector", 2459, "MQRC_SELECTOR_SYNTAX_ERROR",
                     "The selector does not parse; the message names the position.")
BadProperty = _error("BadProperty", 3306, "RMQRC_BAD_QUEUE_PROPERTY",
                     "A queue property with a value out of range, or unknown to that queue type.")
NotAuthorized = _error("NotAuthorized", 2035, "MQRC_NOT_AUTHORIZED",
                       "The caller may not do this: a channel peer whose certificate or HTTP user does not speak"
                       " for the queue manager its HELLO names (item 26).")
SecurityError = _error("SecurityError", 2063, "MQRC_SECURITY_ERROR",
                       "A message sealed by a queue's cryptor cannot be opened: altered at rest or in transit,"
                       " or under a key this queue manager does not hold (items 7, 26).")
NotAuthenticated = _error("NotAuthenticated", 3307, "RMQRC_NOT_AUTHENTICATED",
                          "A queue with an authenticator takes messages over a channel only from a peer that"
                          " authenticated (the seed's Except_Authenticate, seed 004 l.4875; item 26).")
StoreFailed = _error("StoreFailed", 2102, "MQRC_RESOURCE_PROBLEM",
                     "The store cannot write (disk full, I/O error): nothing more is acknowledged.")


class StoreInUse(QueueError):
    """The queue manager's store is held by another process (a running broker): two
    processes on one store would deliver messages twice. ``holder`` is its pid."""

    reason = 2042
    name = "MQRC_OBJECT_IN_USE"

    def __init__(self, message: str, holder: str = "unknown") -> None:
        super().__init__(message)
        self.holder = holder


UnknownUID = _error("UnknownUID", 3301, "RMQRC_UNKNOWN_UID",
                    "confirmPut/confirmGet of a UID that is neither pending nor remembered as confirmed.")
DuplicateMessage = _error("DuplicateMessage", 3302, "RMQRC_DUPLICATE_UID",
                          "A put of a UID already on the queue or already confirmed, without Resend (item 19).")


class AlreadyDelivered(DuplicateMessage):  # type: ignore[misc, valid-type]
    """A relayed put whose destination (reached synchronously) has confirmed that UID
    already: the sender may remove its copy (duplicate removal, item 19)."""


WrongLock = _error("WrongLock", 3303, "RMQRC_WRONG_LOCK_ID",
                   "The message is locked by browseAndLock and the lock id given is not the locker's (item 13).")
RuleVeto = _error("RuleVeto", 3304, "RMQRC_RULE_VETO",
                  "A queue manager or queue rule refused the operation (item 32).")
ConfirmIdRequired = _error("ConfirmIdRequired", 3305, "RMQRC_CONFIRM_ID_REQUIRED",
                           "browseAndLock needs a confirm id > 0 (item 13).")

#: Every error class, for the documentation table and the REST/channel mapping.
ALL_ERRORS: tuple[type[QueueError], ...] = (
    UnknownQueue, UnknownQueueManager, QueueFull, MessageTooBig, BadName, MessageExpired, NoMessage,
    QueueExists, QueueNotEmpty, NotAllowed, NotConnected, QueueManagerClosed, QueueManagerDeleted, BadSelector,
    BadProperty, NotAuthorized, SecurityError, NotAuthenticated, StoreFailed, StoreInUse, UnknownUID,
    DuplicateMessage, WrongLock, RuleVeto,
    ConfirmIdRequired,
)
