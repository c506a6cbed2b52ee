"""Strict decoding of untrusted bytes: every validation rule, with the reason code it yields.

Each case is written from the rule it checks (3.1.1 / 5.0 section, seed line, or the
conformance group whose answer fixed the reason code); the bytes are built here, not copied.
"""

from __future__ import annotations

import pytest

from relaymq.mqtt import packets as p
from relaymq.mqtt.codec import decode, decode_remaining_length, encode
from relaymq.mqtt.errors import MalformedPacket, MQTTError, ProtocolError
from relaymq.mqtt.packets import Packet


def dec(hex_bytes: str, level: int, from_client: bool = True) -> Packet:
    """Decode one packet given as hex (fixed header included)."""
    data = bytes.fromhex(hex_bytes)
    header = decode_remaining_length(data, 1)
    assert header is not None
    length, start = header
    return decode(data[0], data[start:start + length] if start + length <= len(data)
                  else data[start:], level, from_client=from_client)


def raises(code: int, hex_bytes: str, level: int, from_client: bool = True) -> MQTTError:
    with pytest.raises(MQTTError) as info:
        dec(hex_bytes, level, from_client)
    assert info.value.reason_code == code, info.value.message
    return info.value


def connect_hex(name: str, level: int, flags: int, payload: str, props: str = "",
                first: int = 0x10) -> str:
    """A CONNECT with the given protocol name, level, connect flags and payload (hex)."""
    name_b = name.encode()
    body = (len(name_b).to_bytes(2, "big") + name_b + bytes((level, flags)) + b"\x00\x3c"
            + bytes.fromhex(props) + bytes.fromhex(payload))
    return f"{first:02X} {len(body):02X} {body.hex()}"


# --- Fixed header ------------------------------------------------------------------------------

@pytest.mark.parametrize("level", [3, 4, 5])
def test_reserved_packet_type_0(level: int) -> None:
    """mqtt.md item 14, seed 000 l.789 (type 0 reserved); conformance FORBIDDEN answers 0x82."""
    raises(0x82, "00 00", level)
    raises(0x82, "01 00", level)


@pytest.mark.parametrize(("type_byte", "body"), [
    (0x40, "00 01"), (0x50, "00 01"), (0x70, "00 01"), (0xC0, ""), (0xE0, ""),
])
@pytest.mark.parametrize("flags", [1, 2, 4, 8])
@pytest.mark.parametrize("level", [4, 5])
def test_reserved_flags_must_be_zero(type_byte: int, body: str, flags: int, level: int) -> None:
    """3.1.1 §2.2.2 [MQTT-2.2.2-2], 5.0 §2.1.3: flags 0000 for PUBACK, PUBREC, PUBCOMP,
    PINGREQ, DISCONNECT; anything else is malformed (conformance "41 unsolicited", "C1")."""
    length = len(bytes.fromhex(body))
    raises(0x81, f"{type_byte | flags:02X} {length:02X} {body}", level)


@pytest.mark.parametrize("first", ["60", "63", "64", "66", "6A"])
@pytest.mark.parametrize("level", [4, 5])
def test_pubrel_subscribe_unsubscribe_need_flags_0010(first: str, level: int) -> None:
    """3.1.1 [MQTT-3.6.1-1], [MQTT-3.8.1-1], [MQTT-3.10.1-1]: PUBREL, SUBSCRIBE and
    UNSUBSCRIBE must carry flags 0010."""
    raises(0x81, f"{first} 02 00 05", level)
    sub_first = f"{0x80 | int(first[1], 16):02X}"
    unsub_first = f"{0xA0 | int(first[1], 16):02X}"
    props = "00" if level == 5 else ""
    n = 2 + len(bytes.fromhex(props)) + 4
    raises(0x81, f"{sub_first} {n:02X} 00 05 {props} 00 01 74 00", level)
    raises(0x81, f"{unsub_first} {n - 1:02X} 00 05 {props} 00 01 74", level)


@pytest.mark.parametrize("first", [0x60, 0x62, 0x63, 0x6F])
def test_v3_pubrel_flags_not_used(first: int) -> None:
    """mqtt.md decision "PUBREL from a v3 client may come with 60 or 62"; seed 000 l.1575-1580
    marks its flag bits x (not used)."""
    assert dec(f"{first:02X} 02 00 07", 3) == p.Pubrel(7)


@pytest.mark.parametrize("first", [0x41, 0x58, 0xC2, 0xE8, 0xBF])
def test_v3_flags_not_used_are_ignored(first: int) -> None:
    """seed 000 l.1313-1608 ("DUP flag: Not used" etc.): v3 ignores the flag bits of packets
    other than PUBLISH, SUBSCRIBE and UNSUBSCRIBE."""
    body = "" if first >> 4 in (p.PINGREQ, p.DISCONNECT) else "00 07"
    n = len(bytes.fromhex(body))
    packet = dec(f"{first:02X} {n:02X} {body}", 3, from_client=first >> 4 != p.UNSUBACK)
    assert packet.packet_type == first >> 4


def test_v3_subscribe_must_be_qos_1_but_may_be_dup() -> None:
    """seed 000 l.1700-1712: SUBSCRIBE is sent at QoS 1 (flags 0 0 1 x), DUP set on a resend."""
    assert dec("8A 06 00 07 00 01 74 01", 3) == p.Subscribe(7, [p.Subscription("t", 1)])
    assert dec("A3 05 00 07 00 01 74", 3) == p.Unsubscribe(7, ["t"])
    raises(0x81, "80 06 00 07 00 01 74 01", 3)
    raises(0x81, "A4 05 00 07 00 01 74", 3)


@pytest.mark.parametrize("level", [3, 4, 5])
def test_publish_qos_3_is_malformed(level: int) -> None:
    """mqtt.md item 14; seed 000 l.835 (QoS 3 reserved); conformance "36 QoS 3" 0x81."""
    props = "00" if level == 5 else ""
    raises(0x81, f"36 {5 + len(props) // 2:02X} 00 01 74 00 09 {props}", level)


def test_dup_on_qos_0_publish() -> None:
    """3.1.1 [MQTT-3.3.1-2]: DUP must be 0 at QoS 0 (conformance "38 QoS 0 Dup 1" 0x81);
    seed 000 l.1440: the v3 DUP bit is simply not used for QoS 0."""
    raises(0x81, "38 04 00 01 74 78", 4)
    raises(0x81, "38 05 00 01 74 00 78", 5)
    assert dec("38 04 00 01 74 78", 3) == p.Publish("t", b"x", 0, dup=True)


# --- Packet identifiers ------------------------------------------------------------------------

@pytest.mark.parametrize("level", [3, 4, 5])
def test_packet_id_0_is_a_protocol_error(level: int) -> None:
    """mqtt.md item 28; seed 000 l.1070-1074 (id 0 is invalid); conformance "mid 0" cases
    answer 0x82."""
    props = "00" if level == 5 else ""
    n = len(props) // 2
    raises(0x82, f"32 {5 + n:02X} 00 01 74 00 00 {props}", level)
    raises(0x82, f"34 {5 + n:02X} 00 01 74 00 00 {props}", level)
    for first in ("40", "50", "62", "70"):
        raises(0x82, f"{first} 02 00 00", level)
    raises(0x82, f"82 {6 + n:02X} 00 00 {props} 00 01 74 00", level)
    raises(0x82, f"A2 {5 + n:02X} 00 00 {props} 00 01 74", level)


# --- Remaining length against content ----------------------------------------------------------

@pytest.mark.parametrize("level", [3, 4, 5])
def test_too_short_bodies_are_malformed(level: int) -> None:
    """seed 000 l.1345, l.1560 (acks carry 2 bytes); conformance "short 0/1" cases 0x81."""
    for first in ("40", "50", "62", "70", "82", "A2"):
        raises(0x81, f"{first} 00", level)
        raises(0x81, f"{first} 01 05", level)
    raises(0x81, "30 01 00", level)  # topic length cut off
    raises(0x81, "30 03 00 05 74", level)  # topic cut off
    raises(0x81, "32 04 00 01 74 00", level)  # packet id cut off


@pytest.mark.parametrize("level", [3, 4])
def test_extra_bytes_are_malformed_before_mqtt5(level: int) -> None:
    """seed 000 l.1345 (Remaining Length of an ack is 2), l.1267-1309 (PINGREQ/PINGRESP and
    DISCONNECT have no variable header): extra bytes make the packet malformed."""
    for first in ("40", "50", "62", "70", "B0"):
        raises(0x81, f"{first} 03 00 05 00", level, from_client=first != "B0")
    raises(0x81, "C0 01 00", level)
    raises(0x81, "E0 01 00", level)
    raises(0x81, "D0 01 00", level, from_client=False)
    raises(0x81, "20 03 00 00 00", level, from_client=False)


def test_extra_bytes_are_malformed_at_mqtt5() -> None:
    """5.0 §3.4.2: after the property block nothing may follow (conformance "long" 0x81)."""
    for first in ("40", "50", "62", "70"):
        raises(0x81, f"{first} 05 00 05 00 00 00", 5)
    raises(0x81, "E0 03 00 00 00", 5)
    raises(0x81, "F0 03 00 00 00", 5)
    raises(0x81, "C0 01 00", 5)
    raises(0x81, "82 08 00 05 00 00 01 74 00 00", 5)  # trailing byte: a cut-off filter


def test_property_length_beyond_the_packet_is_malformed() -> None:
    """5.0 §2.2.2.1; conformance "len=4 short" (property length 1, no property) 0x81."""
    raises(0x81, "40 04 00 05 00 01", 5)
    raises(0x81, "E0 02 00 05", 5)


# --- CONNECT -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["MQTU", "MQT", "MQTTT", "", "mqisdp", "MQIsdpX"])
def test_unknown_protocol_name_is_a_protocol_error(name: str) -> None:
    """3.1.1 [MQTT-3.1.2-1] (close without CONNACK); mqtt.md item 18: exactly "MQIsdp"."""
    raises(0x82, connect_hex(name, 4, 0x02, "00 01 63"), 0)


@pytest.mark.parametrize(("name", "level"), [
    ("MQIsdp", 2), ("MQIsdp", 4), ("MQIsdp", 6), ("MQTT", 3), ("MQTT", 6), ("MQTT", 0)])
def test_unsupported_level_is_0x84(name: str, level: int) -> None:
    """seed 000 l.1111-1144 (rc 1: unacceptable protocol version), 3.1.1 [MQTT-3.1.2-2],
    5.0 §3.1.2.2 (0x84): the broker answers CONNACK 1 / 0x84."""
    raises(0x84, connect_hex(name, level, 0x02, "00 01 63"), 0)


@pytest.mark.parametrize(("name", "level"), [("MQIsdp", 3), ("MQTT", 4), ("MQTT", 5)])
@pytest.mark.parametrize("reader_level", [0, 3, 4, 5])
def test_connect_decodes_by_its_own_level(name: str, level: int, reader_level: int) -> None:
    """Brief: CONNECT carries its own level; mqtt.md decision 1 (one listener, the CONNECT's
    name and level select the rules)."""
    props = "00" if level == 5 else ""
    packet = dec(connect_hex(name, level, 0x02, "00 02 63 31", props), reader_level)
    assert packet == p.Connect(name, level, True, 60, "c1")


@pytest.mark.parametrize("first", [0x11, 0x12, 0x14, 0x18])
def test_connect_fixed_header_flags(first: int) -> None:
    """3.1.1 §2.2.2 (CONNECT flags 0000, malformed otherwise); seed 000 l.1152-1160 (v3:
    "not used"; conformance "v3.1 CONNECT 14 ok" is accepted)."""
    raises(0x81, connect_hex("MQTT", 4, 0x02, "00 01 63", first=first), 0)
    raises(0x81, connect_hex("MQTT", 5, 0x02, "00 01 63", "00", first=first), 0)
    assert dec(connect_hex("MQIsdp", 3, 0x02, "00 01 63", first=first), 0).client_id == "c"


def test_reserved_connect_flag_bit_0() -> None:
    """3.1.1 [MQTT-3.1.2-3], 5.0 §3.1.2.3: bit 0 must be 0; seed 000 l.966: reserved in v3."""
    raises(0x81, connect_hex("MQTT", 4, 0x03, "00 01 63"), 0)
    raises(0x81, connect_hex("MQTT", 5, 0x03, "00 01 63", "00"), 0)
    assert dec(connect_hex("MQIsdp", 3, 0x03, "00 01 63"), 0).clean_start


@pytest.mark.parametrize("level", [3, 4, 5])
def test_will_qos_3_is_malformed(level: int) -> None:
    """mqtt.md item 19; 3.1.1 [MQTT-3.1.2-14]: Will QoS 3 is invalid."""
    props = "00" if level == 5 else ""
    will = ("00 " if level == 5 else "") + "00 01 77 00 01 6D"
    name = "MQIsdp" if level == 3 else "MQTT"
    raises(0x81, connect_hex(name, level, 0x1E, "00 01 63 " + will, props), 0)


@pytest.mark.parametrize("flags", [0x0A, 0x12, 0x32])
def test_will_qos_or_retain_without_will_flag(flags: int) -> None:
    """3.1.1 [MQTT-3.1.2-11], [MQTT-3.1.2-15]: without the will flag, will QoS and retain
    must be 0; seed 000 l.1010 ("otherwise its value is disregarded") for v3."""
    raises(0x81, connect_hex("MQTT", 4, flags, "00 01 63"), 0)
    raises(0x81, connect_hex("MQTT", 5, flags, "00 01 63", "00"), 0)
    assert dec(connect_hex("MQIsdp", 3, flags, "00 01 63"), 0).will is None


def test_will_is_read_with_qos_retain_and_raw_message_bytes() -> None:
    """seed 000 l.1203-1217 (mqtt.md items 24-25): will topic then will message; the message
    is published without its two length bytes."""
    packet = dec(connect_hex("MQIsdp", 3, 0x2E, "00 01 63 00 03 61 2F 62 00 02 00 FF"), 0)
    assert packet.will == p.Will("a/b", b"\x00\xff", 1, True)


def test_missing_will_fields_are_malformed() -> None:
    """3.1.1 [MQTT-3.1.2-9]: with the will flag set, will topic and message must be present."""
    raises(0x81, connect_hex("MQTT", 4, 0x06, "00 01 63"), 0)
    raises(0x81, connect_hex("MQTT", 4, 0x06, "00 01 63 00 01 77"), 0)


def test_password_without_user_name() -> None:
    """3.1.1 [MQTT-3.1.2-22]: no password without a user name; 5.0 §3.1.2.9 allows it."""
    raises(0x81, connect_hex("MQTT", 4, 0x42, "00 01 63 00 02 70 77"), 0)
    assert dec(connect_hex("MQTT", 5, 0x42, "00 01 63 00 02 70 77", "00"), 0).password == b"pw"


def test_user_name_and_password_fields() -> None:
    """3.1.1 [MQTT-3.1.2-19], [MQTT-3.1.2-21]: flagged fields must be present; unflagged ones
    absent ([MQTT-3.1.2-18], [MQTT-3.1.2-20]: leftover bytes are malformed)."""
    raises(0x81, connect_hex("MQTT", 4, 0x82, "00 01 63"), 0)
    raises(0x81, connect_hex("MQTT", 4, 0xC2, "00 01 63 00 01 75"), 0)
    raises(0x81, connect_hex("MQTT", 4, 0x02, "00 01 63 00 01 75"), 0)
    raises(0x81, connect_hex("MQTT", 4, 0x82, "00 01 63 00 01 75 00 01 70"), 0)
    packet = dec(connect_hex("MQTT", 4, 0xC2, "00 01 63 00 00 00 01 00"), 0)
    assert (packet.username, packet.password) == ("", b"\x00")


@pytest.mark.parametrize("bad", ["00", "EDA080", "C0AF", "01", "7F", "C29F"])
def test_connect_strings_utf8(bad: str) -> None:
    """mqtt.md item 32 (invalid UTF-8, U+0000); 3.1.1 §1.5.3 (control characters may be
    rejected; conformance "Client ID with U+0001" closes): client id, will topic, user name."""
    n = len(bytes.fromhex(bad)) + 1
    s = f"00 {n:02X} 63 {bad}"
    raises(0x81, connect_hex("MQTT", 4, 0x02, s), 0)
    raises(0x81, connect_hex("MQTT", 5, 0x02, s, "00"), 0)
    raises(0x81, connect_hex("MQTT", 4, 0x06, f"00 01 63 {s} 00 00"), 0)
    raises(0x81, connect_hex("MQTT", 4, 0x82, f"00 01 63 {s}"), 0)


def test_v3_strings_allow_ascii_controls_but_not_nul() -> None:
    """seed 000 l.1938 (ASCII 0x01-0x7F), mqtt.md item 32 (never U+0000)."""
    assert dec(connect_hex("MQIsdp", 3, 0x02, "00 02 63 01"), 0).client_id == "c\x01"
    raises(0x81, connect_hex("MQIsdp", 3, 0x02, "00 02 63 00"), 0)
    assert dec("30 05 00 02 74 1F 78", 3).topic == "t\x1f"


def test_connect_properties_are_checked() -> None:
    """5.0 §3.1.2.11: CONNECT properties; a PUBLISH-only property is not allowed (0x82)."""
    raises(0x82, connect_hex("MQTT", 5, 0x02, "00 01 63", "03 23 00 01"), 0)
    raises(0x82, connect_hex("MQTT", 5, 0x02, "00 01 63", "03 21 00 00"), 0)  # receive max 0
    packet = dec(connect_hex("MQTT", 5, 0x06, "00 01 63 05 18 00 00 00 05 00 01 77 00 00",
                             "05 11 00 00 00 1E"), 0)
    assert packet.properties == {"session_expiry_interval": 30}
    assert packet.will == p.Will("w", b"", 0, False, {"will_delay_interval": 5})
    raises(0x82, connect_hex("MQTT", 5, 0x06, "00 01 63 02 24 01 00 01 77 00 00", "00"), 0)


# --- PUBLISH -----------------------------------------------------------------------------------

def test_empty_topic_name() -> None:
    """3.1.1 [MQTT-4.7.3-1] (at least one character; conformance "30 topic 0" 0x81); 5.0
    §3.3.2.3.4: empty only with a Topic Alias."""
    raises(0x81, "30 02 00 00", 4)
    raises(0x81, "30 03 00 00 00", 5)
    raises(0x81, "30 02 00 00", 3)
    assert dec("30 07 00 00 03 23 00 02 78", 5) == p.Publish("", b"x", 0,
                                                                properties={"topic_alias": 2})


def test_publish_topic_utf8() -> None:
    """mqtt.md item 32; conformance "topic with U+0001 / U+D800 / U+0000" answer 0x81."""
    raises(0x81, "30 06 00 02 74 00 00 78", 5)
    raises(0x81, "30 07 00 03 ED A0 80 00", 5)
    raises(0x81, "30 05 00 02 74 01 78", 4)


def test_subscription_identifier_in_a_client_publish() -> None:
    """5.0 [MQTT-3.3.4-6] and the conformance cases: one is tolerated, a repeated one is a
    protocol error from a client; a server sends one per matching subscription."""
    assert dec("30 08 00 01 74 02 0B 05 78 79", 5).properties == {"subscription_identifier": [5]}
    raises(0x82, "30 0A 00 01 74 04 0B 05 0B 06 78 79", 5)
    packet = dec("30 0A 00 01 74 04 0B 05 0B 06 78 79", 5, from_client=False)
    assert packet.properties == {"subscription_identifier": [5, 6]}


# --- SUBSCRIBE / UNSUBSCRIBE -------------------------------------------------------------------

@pytest.mark.parametrize("level", [3, 4, 5])
def test_subscribe_and_unsubscribe_need_a_filter(level: int) -> None:
    """3.1.1 [MQTT-3.8.3-3], [MQTT-3.10.3-2]; conformance "82 short 3" / "A2 short 3" answer
    0x81 (the OASIS text says protocol error; the reference broker's answer is followed)."""
    props = "00" if level == 5 else ""
    n = 2 + len(props) // 2
    raises(0x81, f"82 {n:02X} 00 05 {props}", level)
    raises(0x81, f"A2 {n:02X} 00 05 {props}", level)


@pytest.mark.parametrize("level", [3, 4, 5])
def test_empty_topic_filter_is_malformed(level: int) -> None:
    """3.1.1 [MQTT-4.7.3-1]; conformance "single topic len 0", "multiple zero 2nd" 0x81."""
    props = "00" if level == 5 else ""
    n = len(props) // 2
    raises(0x81, f"82 {9 + n:02X} 00 05 {props} 00 01 74 00 00 00 00", level)
    raises(0x81, f"A2 {7 + n:02X} 00 05 {props} 00 01 74 00 00", level)


def test_subscribe_missing_options_byte() -> None:
    """seed 000 l.1760: each filter is followed by its requested QoS byte."""
    raises(0x81, "82 05 00 05 00 01 74", 4)


@pytest.mark.parametrize("options", [0x03, 0x30, 0x40, 0x80, 0xC1])
def test_level_5_subscription_options(options: int) -> None:
    """5.0 §3.8.3.1: QoS 3, Retain Handling 3 and the reserved bits 7-6 are malformed."""
    raises(0x81, f"82 07 00 05 00 00 01 74 {options:02X}", 5)


def test_level_5_subscription_options_decoded() -> None:
    """5.0 §3.8.3.1: QoS bits 1-0, No Local bit 2, Retain As Published bit 3, Retain
    Handling bits 5-4."""
    packet = dec("82 07 00 05 00 00 01 74 2E", 5)
    assert packet.subscriptions == [p.Subscription("t", 2, True, True, 2)]


@pytest.mark.parametrize("options", [0x03, 0x04, 0x08, 0x10, 0x80])
def test_level_4_requested_qos_byte(options: int) -> None:
    """3.1.1 [MQTT-3.8.3-4]: bits 7-2 reserved, QoS 3 malformed."""
    raises(0x81, f"82 06 00 05 00 01 74 {options:02X}", 4)


def test_level_3_requested_qos_upper_bits_not_used() -> None:
    """seed 000 l.1778: the upper 6 bits are not used in v3; QoS 3 stays reserved (l.835)."""
    assert dec("82 06 00 05 00 01 74 FD", 3).subscriptions == [p.Subscription("t", 1)]
    raises(0x81, "82 06 00 05 00 01 74 03", 3)


@pytest.mark.parametrize("entry", ["02 01 00", "03 23 00 01", "02 17 01"])
def test_subscribe_disallowed_property_is_malformed(entry: str) -> None:
    """Conformance "SUBSCRIBE/UNSUBSCRIBE DISALLOWED PROPERTIES" answer 0x81.
    Spec: MQTT 5 3.8.2.1 (SUBSCRIBE carries only Subscription Identifier and User Property) and
    2.2.2.2."""
    n = len(bytes.fromhex(entry))
    raises(0x81, f"82 {6 + n:02X} 00 05 {entry} 00 01 74 00", 5)
    raises(0x81, f"A2 {5 + n:02X} 00 05 {entry} 00 01 74", 5)


# --- Reason codes and properties of the acknowledgements ---------------------------------------

@pytest.mark.parametrize(("first", "bad_code"), [
    ("40", "FF"), ("40", "92"), ("50", "01"), ("62", "80"), ("70", "80"), ("70", "20")])
def test_invalid_ack_reason_code_is_a_protocol_error(first: str, bad_code: str) -> None:
    """5.0 §3.4.2.1-3.7.2.1; conformance "rc=unknown", "70 ... 80" answer 0x82."""
    raises(0x82, f"{first} 03 00 05 {bad_code}", 5)
    raises(0x82, f"{first} 04 00 05 {bad_code} 00", 5)


def test_ack_reason_code_and_properties_decoded() -> None:
    """5.0 §3.4.2: packet id, reason code, properties; 2-byte and 3-byte short forms."""
    assert dec("40 02 00 05", 5) == p.Puback(5)
    assert dec("50 03 00 05 80", 5) == p.Pubrec(5, 0x80)
    assert dec("62 08 00 05 92 04 1F 00 01 78", 5) == p.Pubrel(5, 0x92, {"reason_string": "x"})


def test_ack_disallowed_property_is_a_protocol_error() -> None:
    """Conformance "PUBACK DISALLOWED PROPERTIES" answer 0x82; a duplicate reason string too.
    Spec: MQTT 5 3.4.2.2 (PUBACK properties: Reason String, User Property) and 2.2.2.2."""
    raises(0x82, "40 06 00 05 00 02 01 00", 5)
    raises(0x82, "70 0C 00 05 00 08 1F 00 01 61 1F 00 01 62", 5)


def test_disconnect_reason_codes_by_sender() -> None:
    """5.0 §3.14.2.1: 0x04 is a client's code, 0x8B a server's; 0x01 is nobody's."""
    assert dec("E0 01 04", 5) == p.Disconnect(0x04)
    raises(0x82, "E0 01 8B", 5)
    raises(0x82, "E0 01 01", 5)
    assert dec("E0 01 8B", 5, from_client=False) == p.Disconnect(0x8B)
    raises(0x82, "E0 01 04", 5, from_client=False)


def test_disconnect_properties() -> None:
    """5.0 §3.14.2.2: session expiry, reason string, user property, server reference; a
    malformed block is 0x81, a disallowed property 0x82 (conformance DISCONNECT groups)."""
    assert dec("E0 07 00 05 11 00 00 00 00", 5).properties == {"session_expiry_interval": 0}
    raises(0x81, "E0 03 00 01 00", 5)
    raises(0x82, "E0 04 00 02 01 00", 5)


def test_auth_only_at_level_5() -> None:
    """5.0 §3.15: AUTH is new in MQTT 5; before that type 15 is reserved (seed 000 l.806)."""
    assert dec("F0 00", 5) == p.Auth()
    assert dec("F0 01 18", 5) == p.Auth(0x18)
    raises(0x82, "F0 01 01", 5)
    raises(0x82, "F0 00", 4)
    raises(0x82, "F0 00", 3)


# --- Direction ---------------------------------------------------------------------------------

@pytest.mark.parametrize("hex_bytes", ["20 02 00 00", "21 02 00 00", "90 03 00 05 00",
                                       "B0 02 00 05", "D0 00", "D1 00"])
@pytest.mark.parametrize("level", [3, 4, 5])
def test_server_packets_from_a_client_are_a_protocol_error(hex_bytes: str, level: int) -> None:
    """5.0 §2.1.2 (direction of each packet); conformance CONNACK, SUBACK, UNSUBACK and
    PINGRESP groups answer 0x82."""
    raises(0x82, hex_bytes, level)


def test_misdirected_suback_with_bad_flags_is_malformed_first() -> None:
    """Conformance "SUBACK 91", "UNSUBACK B1" answer 0x81 while "CONNACK 21" answers 0x82.
    Spec: mqtt.md item 14 (reserved flag bits, seed 001) and MQTT 3.1.1 2.2.2 (flags of each
    packet type)."""
    raises(0x81, "91 03 00 05 00", 5)
    raises(0x81, "B2 03 00 05 00", 5)
    raises(0x82, "22 03 00 00 00", 5)


def test_client_packets_from_a_server_are_a_protocol_error() -> None:
    """5.0 §2.1.2: a client-side reader rejects CONNECT, SUBSCRIBE, UNSUBSCRIBE, PINGREQ."""
    connect = encode(p.Connect("MQTT", 4, True, 60, "c"), 4)
    with pytest.raises(ProtocolError):
        decode(connect[0], connect[2:], 4, from_client=False)
    raises(0x82, "C0 00", 4, from_client=False)
    raises(0x82, "82 06 00 05 00 01 74 00", 4, from_client=False)


def test_connack_checks_on_the_client_side() -> None:
    """3.1.1 §3.2.2.1 (reserved ack flag bits), §3.2.2.3 (return codes 0-5), 5.0 §3.2.2.2."""
    with pytest.raises(MalformedPacket):
        dec("20 02 02 00", 4, from_client=False)
    with pytest.raises(ProtocolError):
        dec("20 02 00 06", 4, from_client=False)
    with pytest.raises(ProtocolError):
        dec("20 03 00 01 00", 5, from_client=False)
    assert dec("20 02 FF 03", 3, from_client=False) == p.Connack(False, 3)  # l.1125-1126
