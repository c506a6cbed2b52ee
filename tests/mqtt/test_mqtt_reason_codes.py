"""Reason codes (OASIS 5.0 §2.4) and the CONNACK return codes of 3.1.1 and MQIsdp v3."""

from __future__ import annotations

import pytest

from relaymq.mqtt import packets as p
from relaymq.mqtt import reason_codes as rc

# 5.0 Table 2-6 (every distinct value), written out independently of the module.
TABLE_2_6 = {
    "SUCCESS": 0x00, "NORMAL_DISCONNECTION": 0x00, "GRANTED_QOS_0": 0x00, "GRANTED_QOS_1": 0x01,
    "GRANTED_QOS_2": 0x02, "DISCONNECT_WITH_WILL_MESSAGE": 0x04, "NO_MATCHING_SUBSCRIBERS": 0x10,
    "NO_SUBSCRIPTION_EXISTED": 0x11, "CONTINUE_AUTHENTICATION": 0x18, "RE_AUTHENTICATE": 0x19,
    "UNSPECIFIED_ERROR": 0x80, "MALFORMED_PACKET": 0x81, "PROTOCOL_ERROR": 0x82,
    "IMPLEMENTATION_SPECIFIC_ERROR": 0x83, "UNSUPPORTED_PROTOCOL_VERSION": 0x84,
    "CLIENT_IDENTIFIER_NOT_VALID": 0x85, "BAD_USER_NAME_OR_PASSWORD": 0x86,
    "NOT_AUTHORIZED": 0x87, "SERVER_UNAVAILABLE": 0x88, "SERVER_BUSY": 0x89, "BANNED": 0x8A,
    "SERVER_SHUTTING_DOWN": 0x8B, "BAD_AUTHENTICATION_METHOD": 0x8C, "KEEP_ALIVE_TIMEOUT": 0x8D,
    "SESSION_TAKEN_OVER": 0x8E, "TOPIC_FILTER_INVALID": 0x8F, "TOPIC_NAME_INVALID": 0x90,
    "PACKET_IDENTIFIER_IN_USE": 0x91, "PACKET_IDENTIFIER_NOT_FOUND": 0x92,
    "RECEIVE_MAXIMUM_EXCEEDED": 0x93, "TOPIC_ALIAS_INVALID": 0x94, "PACKET_TOO_LARGE": 0x95,
    "MESSAGE_RATE_TOO_HIGH": 0x96, "QUOTA_EXCEEDED": 0x97, "ADMINISTRATIVE_ACTION": 0x98,
    "PAYLOAD_FORMAT_INVALID": 0x99, "RETAIN_NOT_SUPPORTED": 0x9A, "QOS_NOT_SUPPORTED": 0x9B,
    "USE_ANOTHER_SERVER": 0x9C, "SERVER_MOVED": 0x9D, "SHARED_SUBSCRIPTIONS_NOT_SUPPORTED": 0x9E,
    "CONNECTION_RATE_EXCEEDED": 0x9F, "MAXIMUM_CONNECT_TIME": 0xA0,
    "SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED": 0xA1, "WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED": 0xA2,
}


@pytest.mark.parametrize(("name", "value"), sorted(TABLE_2_6.items()))
def test_reason_code_constants(name: str, value: int) -> None:
    """5.0 Table 2-6: every reason code has its named constant.
    Spec: MQTT 5 2.4."""
    assert getattr(rc, name) == value


@pytest.mark.parametrize(("packet_type", "valid", "invalid"), [
    (p.PUBACK, [0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99], [0x01, 0x11, 0x92, 0xFF]),
    (p.PUBREC, [0x00, 0x10, 0x99], [0x04, 0x92]),
    (p.PUBREL, [0x00, 0x92], [0x80, 0x10]),
    (p.PUBCOMP, [0x00, 0x92], [0x80, 0x20, 0xFF]),
    (p.AUTH, [0x00, 0x18, 0x19], [0x01, 0x80]),
    (p.SUBACK, [0x00, 0x01, 0x02, 0x80, 0x9E, 0xA1, 0xA2], [0x03, 0x11, 0xFF]),
    (p.UNSUBACK, [0x00, 0x11, 0x8F], [0x01, 0x9E]),
    (p.CONNACK, [0x00, 0x84, 0x8C, 0x9F], [0x01, 0x8B, 0xA0]),
])
def test_valid_reason_codes_per_packet(packet_type: int, valid: list[int],
                                       invalid: list[int]) -> None:
    """5.0 §3.2.2.2, §3.4.2.1, §3.5.2.1, §3.6.2.1, §3.7.2.1, §3.9.3, §3.11.3, §3.15.2.1;
    conformance "70 unsolicited rc=20" (0x82 for a code the packet cannot carry)."""
    for code in valid:
        assert rc.is_valid_reason_code(packet_type, code)
    for code in invalid:
        assert not rc.is_valid_reason_code(packet_type, code)


def test_disconnect_codes_depend_on_the_sender() -> None:
    """5.0 §3.14.2.1 "Sent by": 0x04 only from a client; 0x87, 0x8B, 0x8E, 0x9C... only from a
    server (conformance "E0 RC=0x8B (server shutting down - invalid)")."""
    assert rc.is_valid_reason_code(p.DISCONNECT, 0x04, from_client=True)
    assert not rc.is_valid_reason_code(p.DISCONNECT, 0x04, from_client=False)
    for server_only in (0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F,
                        0xA0, 0xA1, 0xA2):
        assert not rc.is_valid_reason_code(p.DISCONNECT, server_only, from_client=True)
        assert rc.is_valid_reason_code(p.DISCONNECT, server_only, from_client=False)
    for either in (0x00, 0x80, 0x81, 0x82, 0x83, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99):
        assert rc.is_valid_reason_code(p.DISCONNECT, either, from_client=True)
        assert rc.is_valid_reason_code(p.DISCONNECT, either, from_client=False)
    assert not rc.is_valid_reason_code(p.DISCONNECT, 0x01, from_client=True)


@pytest.mark.parametrize(("reason", "level_4"), [
    (0x00, 0), (0x84, 1), (0x85, 2), (0x88, 3), (0x89, 3), (0x86, 4), (0x87, 5),
])
def test_connack_code_for_level_4(reason: int, level_4: int) -> None:
    """3.1.1 §3.2.2.3 Table 3.1: return codes 0-5 for the MQTT 5 reasons they correspond to."""
    assert rc.connack_code_for_level(reason, 4) == level_4
    assert rc.connack_code_for_level(reason, 5) == reason


@pytest.mark.parametrize(("reason", "level_3"), [
    (0x00, 0), (0x84, 1), (0x85, 2), (0x88, 3), (0x89, 3), (0x86, 2), (0x87, 2),
])
def test_connack_code_for_level_3_knows_only_0_to_3(reason: int, level_3: int) -> None:
    """seed 000 l.1111-1144 (mqtt.md item 22): v3 return codes are 0-3 only."""
    assert rc.connack_code_for_level(reason, 3) == level_3
    assert rc.connack_code_for_level(reason, 3) <= 3


def test_connack_code_for_unmapped_failure() -> None:
    """A failure with no 3.1.1 counterpart must still refuse the connection (never 0)."""
    for reason in (0x80, 0x83, 0x97, 0x9F):
        assert rc.connack_code_for_level(reason, 4) == rc.CONNACK_SERVER_UNAVAILABLE
        assert rc.connack_code_for_level(reason, 3) == rc.CONNACK_SERVER_UNAVAILABLE
    assert rc.connack_code_for_level(0x8A, 4) == rc.CONNACK_NOT_AUTHORIZED  # banned


def test_connack_code_passes_old_codes_through() -> None:
    """Callers may already hold a 3.1.1 return code; translating it again changes nothing."""
    for code in range(6):
        assert rc.connack_code_for_level(code, 4) == code
