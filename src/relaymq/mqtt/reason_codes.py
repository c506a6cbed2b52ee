"""MQTT reason codes: the MQTT 5.0 table (OASIS 5.0 §2.4), which of them each packet may carry,
and the CONNACK return codes of MQTT 3.1.1 and MQIsdp v3 (seed 000 l.1111-1144).

Errors anywhere in the broker carry an MQTT 5 reason code; a level-3 or level-4 connection
gets it translated here by :func:`connack_code_for_level` (design guide: "errors carry reason
codes from the core to the edge, where each protocol maps them").
"""

from __future__ import annotations

from typing import Final

from relaymq.mqtt.packets import (
    AUTH, CONNACK, DISCONNECT, MQISDP_3, MQTT_5, PUBACK, PUBCOMP, PUBREC, PUBREL, SUBACK,
    UNSUBACK,
)

# --- MQTT 5.0 reason codes (OASIS 5.0 Table 2-6) ---------------------------------------------
SUCCESS: Final = 0x00
NORMAL_DISCONNECTION: Final = 0x00
GRANTED_QOS_0: Final = 0x00
GRANTED_QOS_1: Final = 0x01
GRANTED_QOS_2: Final = 0x02
DISCONNECT_WITH_WILL_MESSAGE: Final = 0x04
NO_MATCHING_SUBSCRIBERS: Final = 0x10
NO_SUBSCRIPTION_EXISTED: Final = 0x11
CONTINUE_AUTHENTICATION: Final = 0x18
RE_AUTHENTICATE: Final = 0x19
UNSPECIFIED_ERROR: Final = 0x80
MALFORMED_PACKET: Final = 0x81
PROTOCOL_ERROR: Final = 0x82
IMPLEMENTATION_SPECIFIC_ERROR: Final = 0x83
UNSUPPORTED_PROTOCOL_VERSION: Final = 0x84
CLIENT_IDENTIFIER_NOT_VALID: Final = 0x85
BAD_USER_NAME_OR_PASSWORD: Final = 0x86
NOT_AUTHORIZED: Final = 0x87
SERVER_UNAVAILABLE: Final = 0x88
SERVER_BUSY: Final = 0x89
BANNED: Final = 0x8A
SERVER_SHUTTING_DOWN: Final = 0x8B
BAD_AUTHENTICATION_METHOD: Final = 0x8C
KEEP_ALIVE_TIMEOUT: Final = 0x8D
SESSION_TAKEN_OVER: Final = 0x8E
TOPIC_FILTER_INVALID: Final = 0x8F
TOPIC_NAME_INVALID: Final = 0x90
PACKET_IDENTIFIER_IN_USE: Final = 0x91
PACKET_IDENTIFIER_NOT_FOUND: Final = 0x92
RECEIVE_MAXIMUM_EXCEEDED: Final = 0x93
TOPIC_ALIAS_INVALID: Final = 0x94
PACKET_TOO_LARGE: Final = 0x95
MESSAGE_RATE_TOO_HIGH: Final = 0x96
QUOTA_EXCEEDED: Final = 0x97
ADMINISTRATIVE_ACTION: Final = 0x98
PAYLOAD_FORMAT_INVALID: Final = 0x99
RETAIN_NOT_SUPPORTED: Final = 0x9A
QOS_NOT_SUPPORTED: Final = 0x9B
USE_ANOTHER_SERVER: Final = 0x9C
SERVER_MOVED: Final = 0x9D
SHARED_SUBSCRIPTIONS_NOT_SUPPORTED: Final = 0x9E
CONNECTION_RATE_EXCEEDED: Final = 0x9F
MAXIMUM_CONNECT_TIME: Final = 0xA0
SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED: Final = 0xA1
WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED: Final = 0xA2

# --- Which codes each packet may carry (OASIS 5.0 §3.2.2.2, 3.4.2.1, 3.5.2.1, 3.6.2.1,
# 3.7.2.1, 3.9.3, 3.11.3, 3.14.2.1, 3.15.2.1) ---------------------------------------------------
_PUBLISH_RESPONSE = frozenset({
    SUCCESS, NO_MATCHING_SUBSCRIBERS, UNSPECIFIED_ERROR, IMPLEMENTATION_SPECIFIC_ERROR,
    NOT_AUTHORIZED, TOPIC_NAME_INVALID, PACKET_IDENTIFIER_IN_USE, QUOTA_EXCEEDED,
    PAYLOAD_FORMAT_INVALID,
})
_PUBLISH_RELEASE = frozenset({SUCCESS, PACKET_IDENTIFIER_NOT_FOUND})

# DISCONNECT codes either side may send.
_DISCONNECT_EITHER = frozenset({
    NORMAL_DISCONNECTION, UNSPECIFIED_ERROR, MALFORMED_PACKET, PROTOCOL_ERROR,
    IMPLEMENTATION_SPECIFIC_ERROR, TOPIC_NAME_INVALID, RECEIVE_MAXIMUM_EXCEEDED,
    TOPIC_ALIAS_INVALID, PACKET_TOO_LARGE, MESSAGE_RATE_TOO_HIGH, QUOTA_EXCEEDED,
    ADMINISTRATIVE_ACTION, PAYLOAD_FORMAT_INVALID,
})
#: DISCONNECT reason codes a client may send (5.0 §3.14.2.1, "Sent by" column).
CLIENT_DISCONNECT_CODES: Final = _DISCONNECT_EITHER | {DISCONNECT_WITH_WILL_MESSAGE}
#: DISCONNECT reason codes a server may send.
SERVER_DISCONNECT_CODES: Final = _DISCONNECT_EITHER | {
    NOT_AUTHORIZED, SERVER_BUSY, SERVER_SHUTTING_DOWN, KEEP_ALIVE_TIMEOUT, SESSION_TAKEN_OVER,
    TOPIC_FILTER_INVALID, RETAIN_NOT_SUPPORTED, QOS_NOT_SUPPORTED, USE_ANOTHER_SERVER,
    SERVER_MOVED, SHARED_SUBSCRIPTIONS_NOT_SUPPORTED, CONNECTION_RATE_EXCEEDED,
    MAXIMUM_CONNECT_TIME, SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED,
    WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED,
}

#: Reason codes allowed per packet type (DISCONNECT: either sender; see the two sets above).
VALID_REASON_CODES: Final[dict[int, frozenset[int]]] = {
    CONNACK: frozenset({
        SUCCESS, UNSPECIFIED_ERROR, MALFORMED_PACKET, PROTOCOL_ERROR,
        IMPLEMENTATION_SPECIFIC_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
        CLIENT_IDENTIFIER_NOT_VALID, BAD_USER_NAME_OR_PASSWORD, NOT_AUTHORIZED,
        SERVER_UNAVAILABLE, SERVER_BUSY, BANNED, BAD_AUTHENTICATION_METHOD, TOPIC_NAME_INVALID,
        PACKET_TOO_LARGE, QUOTA_EXCEEDED, PAYLOAD_FORMAT_INVALID, RETAIN_NOT_SUPPORTED,
        QOS_NOT_SUPPORTED, USE_ANOTHER_SERVER, SERVER_MOVED, CONNECTION_RATE_EXCEEDED,
    }),
    PUBACK: _PUBLISH_RESPONSE,
    PUBREC: _PUBLISH_RESPONSE,
    PUBREL: _PUBLISH_RELEASE,
    PUBCOMP: _PUBLISH_RELEASE,
    SUBACK: frozenset({
        GRANTED_QOS_0, GRANTED_QOS_1, GRANTED_QOS_2, UNSPECIFIED_ERROR,
        IMPLEMENTATION_SPECIFIC_ERROR, NOT_AUTHORIZED, TOPIC_FILTER_INVALID,
        PACKET_IDENTIFIER_IN_USE, QUOTA_EXCEEDED, SHARED_SUBSCRIPTIONS_NOT_SUPPORTED,
        SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED, WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED,
    }),
    UNSUBACK: frozenset({
        SUCCESS, NO_SUBSCRIPTION_EXISTED, UNSPECIFIED_ERROR, IMPLEMENTATION_SPECIFIC_ERROR,
        NOT_AUTHORIZED, TOPIC_FILTER_INVALID, PACKET_IDENTIFIER_IN_USE,
    }),
    DISCONNECT: CLIENT_DISCONNECT_CODES | SERVER_DISCONNECT_CODES,
    AUTH: frozenset({SUCCESS, CONTINUE_AUTHENTICATION, RE_AUTHENTICATE}),
}

#: SUBACK return codes before MQTT 5: the granted QoS, or 0x80 failure (3.1.1 §3.9.3).
SUBACK_CODES_311: Final = frozenset({GRANTED_QOS_0, GRANTED_QOS_1, GRANTED_QOS_2, 0x80})


def is_valid_reason_code(packet_type: int, code: int, from_client: bool | None = None) -> bool:
    """Whether ``code`` may appear in a ``packet_type`` packet. For DISCONNECT, pass
    ``from_client`` to apply the "sent by" restriction of 5.0 §3.14.2.1."""
    if packet_type == DISCONNECT and from_client is not None:
        return code in (CLIENT_DISCONNECT_CODES if from_client else SERVER_DISCONNECT_CODES)
    allowed = VALID_REASON_CODES.get(packet_type)
    return allowed is not None and code in allowed


# --- CONNACK return codes of MQTT 3.1.1 (§3.2.2.3) and MQIsdp v3 (seed 000 l.1111-1144) -----
CONNACK_ACCEPTED: Final = 0
CONNACK_UNACCEPTABLE_PROTOCOL_VERSION: Final = 1
CONNACK_IDENTIFIER_REJECTED: Final = 2
CONNACK_SERVER_UNAVAILABLE: Final = 3
CONNACK_BAD_USER_NAME_OR_PASSWORD: Final = 4  # 3.1.1 only
CONNACK_NOT_AUTHORIZED: Final = 5  # 3.1.1 only

_CONNACK_311: Final[dict[int, int]] = {
    SUCCESS: CONNACK_ACCEPTED,
    UNSUPPORTED_PROTOCOL_VERSION: CONNACK_UNACCEPTABLE_PROTOCOL_VERSION,
    CLIENT_IDENTIFIER_NOT_VALID: CONNACK_IDENTIFIER_REJECTED,
    SERVER_UNAVAILABLE: CONNACK_SERVER_UNAVAILABLE,
    SERVER_BUSY: CONNACK_SERVER_UNAVAILABLE,
    BAD_USER_NAME_OR_PASSWORD: CONNACK_BAD_USER_NAME_OR_PASSWORD,
    BAD_AUTHENTICATION_METHOD: CONNACK_BAD_USER_NAME_OR_PASSWORD,
    NOT_AUTHORIZED: CONNACK_NOT_AUTHORIZED,
    BANNED: CONNACK_NOT_AUTHORIZED,
}


def connack_code_for_level(reason_code: int, level: int) -> int:
    """Translate an MQTT 5 CONNACK reason code for a client at protocol ``level``.

    Level 5 keeps the code. Level 4 uses the 3.1.1 return codes 0-5; an MQTT 5 failure with
    no 3.1.1 counterpart becomes 3, "server unavailable" (the connection is refused for a
    reason on the server's side that the client cannot name). Level 3 knows only 0-3 (seed
    000 l.1111-1144): the 3.1.1 codes 4 and 5 (credentials, authorisation) become 2,
    "identifier rejected", since it is the client's identity that was refused and retrying
    cannot help, unlike 3. A code already in the old range (0-5) passes through so callers
    may hand in either form."""
    if level >= MQTT_5:
        return reason_code
    if reason_code <= CONNACK_NOT_AUTHORIZED:
        code = reason_code
    else:
        code = _CONNACK_311.get(reason_code, CONNACK_SERVER_UNAVAILABLE)
    if level <= MQISDP_3 and code > CONNACK_SERVER_UNAVAILABLE:
        return CONNACK_IDENTIFIER_REJECTED
    return code
