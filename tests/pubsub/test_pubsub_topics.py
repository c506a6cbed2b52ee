"""Topic names, topic filters, shared filters and the reference matcher (relaymq.pubsub.topics).

Line numbers are in /work/shared/seeds/003_a8ffa67dc270420a.txt; "pubsub.md" and "README" are
the digests in /work/shared/spec/.
"""

from __future__ import annotations

import pytest

from relaymq.pubsub import topics
from relaymq.pubsub.topics import (
    TopicError,
    parse_shared,
    topic_matches,
    validate_topic_filter,
    validate_topic_name,
)


def reason_of(call, *args, **kwargs) -> str:
    with pytest.raises(TopicError) as caught:
        call(*args, **kwargs)
    assert isinstance(caught.value, ValueError)
    return caught.value.reason


# -- topic_matches: the seed's examples -------------------------------------------------------


@pytest.mark.parametrize(
    "topic_filter, topic, expected",
    [
        ("USA/Alaska/#", "USA/Alaska", True),
        ("USA/Alaska/#", "USA/Alaska/Juneau", True),
        ("USA/Alaska/#", "USA/Alabama", False),
        ("USA/#", "USA", True),
        ("USA/#", "USAX", False),
        ("#", "USA/Alaska/Juneau", True),
        ("#", "/", True),
    ],
)
def test_item_7_multilevel_wildcard_matches_zero_or_more_levels(topic_filter: str, topic: str, expected: bool) -> None:
    """pubsub.md 7; seed 003 l.3031-3043 ('USA/#' matches 'USA'), l.2684 ('#' receives all)."""
    assert topic_matches(topic_filter, topic) is expected


@pytest.mark.parametrize(
    "topic_filter, topic, expected",
    [
        ("USA/+", "USA/Alabama", True),
        ("USA/+", "USA/Alabama/Auburn", False),
        ("USA/+", "USA", False),
        ("+/Alabama/#", "USA/Alabama/Auburn", True),
        ("+/Alabama/#", "USA/Alabama", True),
        ("+/Alabama/#", "USA/Alaska/Juneau", False),
    ],
)
def test_item_8_and_11_single_level_wildcard_matches_exactly_one_level(topic_filter: str, topic: str, expected: bool) -> None:
    """pubsub.md 8 and 11; seed 003 l.3056-3062 ('USA/+'), l.2680-2682 ('+/Alabama/#')."""
    assert topic_matches(topic_filter, topic) is expected


@pytest.mark.parametrize(
    "topic_filter, topic, expected",
    [
        ("USA#", "USA#", True),
        ("USA#", "USA", False),
        ("USA#", "USA/Alaska", False),
        ("USA+", "USA+", True),
        ("USA+", "USAX", False),
        ("level0/level1/#+/level4/level#", "level0/level1/#+/level4/level#", True),
        ("level0/level1/#+/level4/level#", "level0/level1/x/level4/level", False),
        ("##", "##", True),
        ("##", "a/b", False),
    ],
)
def test_item_9_wildcards_mixed_into_a_level_are_literal(topic_filter: str, topic: str, expected: bool) -> None:
    """README decision 2; pubsub.md 9; seed 003 l.3045-3050, 3068-3074, 3078-3100 (mixed with
    other characters, including themselves, the wildcard characters are not wild)."""
    assert topic_matches(topic_filter, topic) is expected


def test_leading_slash_makes_an_empty_first_level() -> None:
    """pubsub.md 3; seed 003 l.3116-3120: '/USA' != 'USA'; '/USA' matches '+/+' and '/+', not '+'."""
    assert topic_matches("+/+", "/USA")
    assert topic_matches("/+", "/USA")
    assert not topic_matches("+", "/USA")
    assert not topic_matches("USA", "/USA")
    assert not topic_matches("/USA", "USA")


def test_empty_levels_are_real_levels() -> None:
    """README decision 2 (one engine, empty levels as MQTT 3.1.1 4.7.1.1 allows); seed 003
    l.3116-3120 (an empty level is distinct)."""
    assert topic_matches("a/+/b", "a//b")
    assert not topic_matches("a/b", "a//b")
    assert topic_matches("a//b", "a//b")
    assert topic_matches("a/+", "a/")
    assert not topic_matches("a/+", "a")


def test_item_1_and_2_any_unicode_and_space_case_sensitive() -> None:
    """README decision 5; pubsub.md 1-2; seed 003 l.3108-3114."""
    assert not topic_matches("ACCOUNTS", "Accounts")
    assert topic_matches("Accounts payable", "Accounts payable")
    assert topic_matches("+/Ünïcödé", "x/Ünïcödé")


@pytest.mark.parametrize(
    "topic_filter, topic, expected",
    [
        ("#", "$SYS/Broker", False),
        ("+/Broker", "$SYS/Broker", False),
        ("+/#", "$SYS/Broker", False),
        ("#/Broker", "$SYS/Broker", False),
        ("$SYS/#", "$SYS/Broker", True),
        ("$SYS/+", "$SYS/Broker", True),
        ("$SYS/Broker", "$SYS/Broker", True),
        ("#", "a/$SYS", True),
        ("a/+", "a/$x", True),
    ],
)
def test_dollar_topics_are_not_matched_by_a_first_level_wildcard(topic_filter: str, topic: str, expected: bool) -> None:
    """README decision 2; pubsub.md 6; seed 003 l.3147-3157 ($SYS and $ISYS reserved)."""
    assert topic_matches(topic_filter, topic) is expected


@pytest.mark.parametrize(
    "topic_filter, topic, expected",
    [
        ("a/#/c", "a/c", True),
        ("a/#/c", "a/b/c", True),
        ("a/#/c", "a/b/b/c", True),
        ("a/#/c", "a/b", False),
        ("a/#/c", "a/c/d", False),
        ("#/c", "c", True),
        ("#/#", "a", True),
        ("a/#/#/b", "a/x/y/z/b", True),
        ("a/#/+", "a", False),
        ("a/#/+", "a/b", True),
    ],
)
def test_multilevel_wildcard_in_the_middle_matches_zero_or_more_levels(
    topic_filter: str, topic: str, expected: bool
) -> None:
    """pubsub.md "Decisions on the seed's ambiguities": '#' may stand at any level of a psc
    subscription and matches zero or more levels there; seed 003 l.2668-2669."""
    assert topic_matches(topic_filter, topic) is expected


def test_reference_matcher_is_not_exponential_in_multilevel_wildcards() -> None:
    """pubsub.md decisions ('#' at any level): a psc filter full of '#' still matches in
    polynomial work (the automaton keeps a set of positions, not paths)."""
    topic_filter = "/".join(["#"] * 40 + ["end"])
    assert topic_matches(topic_filter, "/".join(["x"] * 200 + ["end"]))
    assert not topic_matches(topic_filter, "/".join(["x"] * 200))


# -- validate_topic_name ----------------------------------------------------------------------


@pytest.mark.parametrize("topic", ["USA/Alaska", "/USA", "Accounts payable", "a//b", "a/", "$SYS/Broker", "é"])
def test_valid_topic_names(topic: str) -> None:
    """pubsub.md 1, 3; seed 003 l.3112-3120; MQTT 3.1.1 4.7.1 (empty levels allowed)."""
    validate_topic_name(topic)


@pytest.mark.parametrize("topic", ["USA#", "USA+", "USA/#", "+", "#", "level0/level1/#+/level4/level#"])
def test_strict_topic_name_refuses_any_wildcard_character(topic: str) -> None:
    """README decisions 1-2: MQTT 3.1.1/5 topic names contain no '+' or '#' at all
    (OASIS [MQTT-3.3.2-2])."""
    assert reason_of(validate_topic_name, topic) == topics.WILDCARD_IN_NAME


def test_psc_topic_name_accepts_literal_wildcard_levels() -> None:
    """README decision 2; pubsub.md 9; seed 003 l.3045-3050, 3098-3100: 'USA#', 'USA+' and
    'level0/level1/#+/level4/level#' can be published."""
    for topic in ("USA#", "USA+", "level0/level1/#+/level4/level#"):
        validate_topic_name(topic, strict=False)


@pytest.mark.parametrize("topic", ["level0/level1/+/level4/#", "#", "+", "a/+/b", "a/#"])
def test_psc_topic_name_refuses_wildcard_levels(topic: str) -> None:
    """pubsub.md 10; seed 003 l.3090-3096 (wild cards are not valid in a published topic)."""
    assert reason_of(validate_topic_name, topic, strict=False) == topics.WILDCARD_IN_NAME


def test_psc_topic_name_refuses_double_slash() -> None:
    """pubsub.md 4; seed 003 l.3122-3124 (a name containing '//' is not a valid name)."""
    assert reason_of(validate_topic_name, "a//b", strict=False) == topics.EMPTY_LEVEL


@pytest.mark.parametrize("strict", [True, False])
def test_empty_topic_name_is_refused(strict: bool) -> None:
    """pubsub.md 5; seed 003 l.3139-3145 (the virtual root cannot be published); OASIS [MQTT-4.7.3-1]."""
    assert reason_of(validate_topic_name, "", strict=strict) == topics.EMPTY


@pytest.mark.parametrize("strict", [True, False])
def test_null_character_is_refused(strict: bool) -> None:
    """seed 003 l.1597, 3126 (do not use U+0000 in a topic); OASIS [MQTT-4.7.3-2]. Refused in
    both modes (topics.py module docstring says why)."""
    assert reason_of(validate_topic_name, "a\x00b", strict=strict) == topics.NULL_CHARACTER
    assert reason_of(validate_topic_filter, "a/\x00", strict=strict) == topics.NULL_CHARACTER


def test_max_length_counts_utf8_bytes() -> None:
    """mqtt.md 27 (v3 topic at most 32,767); OASIS 1.5.3 (UTF-8 strings of at most 65,535 bytes):
    the limit is in encoded bytes, not characters."""
    validate_topic_name("a" * 65535)
    assert reason_of(validate_topic_name, "a" * 65536) == topics.TOO_LONG
    validate_topic_name("é" * 5, max_length=10)
    assert reason_of(validate_topic_name, "é" * 6, max_length=11) == topics.TOO_LONG
    assert reason_of(validate_topic_filter, "€/#", max_length=4) == topics.TOO_LONG
    validate_topic_filter("€/#", max_length=5)
    validate_topic_name("x" * 32767, max_length=32767)
    assert reason_of(validate_topic_name, "x" * 32768, max_length=32767) == topics.TOO_LONG


# -- validate_topic_filter --------------------------------------------------------------------


@pytest.mark.parametrize(
    "topic_filter",
    ["#", "+", "USA/#", "USA/+", "+/Alabama/#", "+/+", "/+", "/", "$SYS/#", "+/+/#", "a/+/b"],
)
@pytest.mark.parametrize("strict", [True, False])
def test_valid_filters_in_both_modes(topic_filter: str, strict: bool) -> None:
    """pubsub.md 7, 8, 11; seed 003 l.3045-3047 ('#' and 'USA/#'), 3068-3070 ('+' and 'USA/+'),
    2680-2682 ('+/Alabama/#'), 3116-3120 (leading '/')."""
    validate_topic_filter(topic_filter, strict=strict)


@pytest.mark.parametrize("topic_filter", ["a//b", "//", "+//#"])
def test_strict_filter_accepts_empty_levels(topic_filter: str) -> None:
    """README decisions 1-2: an MQTT 3.1.1/5 client gets the OASIS rule, where empty levels
    are valid (OASIS 4.7.1.1 / 4.7.3); only the psc interface refuses '//' (seed 003 l.3122-3124)."""
    validate_topic_filter(topic_filter, strict=True)


@pytest.mark.parametrize(
    "topic_filter, reason",
    [
        ("USA#", topics.MIXED_WILDCARD),
        ("USA+", topics.MIXED_WILDCARD),
        ("USA/Alaska#", topics.MIXED_WILDCARD),
        ("level0/level1/#+/level4/level#", topics.MIXED_WILDCARD),
        ("a/#/b", topics.MULTI_LEVEL_NOT_LAST),
        ("#/", topics.MULTI_LEVEL_NOT_LAST),
        ("a/b+", topics.MIXED_WILDCARD),
        ("", topics.EMPTY),
    ],
)
def test_strict_filter_refuses_mixed_and_misplaced_wildcards(topic_filter: str, reason: str) -> None:
    """README decision 2: MQTT 3.1.1/5 rejects '#'/'+' mixed into a level (OASIS [MQTT-4.7.1-1..3]);
    '#' only as the last level."""
    assert reason_of(validate_topic_filter, topic_filter, strict=True) == reason


@pytest.mark.parametrize("topic_filter", ["USA#", "USA+", "level0/level1/#+/level4/level#", "a/#/b", "#/#"])
def test_psc_filter_accepts_literal_levels_and_middle_multilevel_wildcard(topic_filter: str) -> None:
    """README decision 2 ('USA#' literal on the psc interface); seed 003 l.3045-3100;
    pubsub.md decisions ('#' may stand at any level of a psc subscription)."""
    validate_topic_filter(topic_filter, strict=False)


@pytest.mark.parametrize("topic_filter", ["a//b", "//", "USA//Alaska/#"])
def test_psc_filter_refuses_double_slash(topic_filter: str) -> None:
    """pubsub.md 4; seed 003 l.3122-3124: subscribing to a topic containing '//' is an error."""
    assert reason_of(validate_topic_filter, topic_filter, strict=False) == topics.EMPTY_LEVEL


def test_empty_filter_is_refused_in_psc_mode() -> None:
    """pubsub.md 5; seed 003 l.3139-3145 (the virtual root cannot be subscribed)."""
    assert reason_of(validate_topic_filter, "", strict=False) == topics.EMPTY


# -- parse_shared -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "topic_filter, expected",
    [
        ("$share/grp/a/b", ("grp", "a/b")),
        ("$share/grp/#", ("grp", "#")),
        ("$share/g/+/x", ("g", "+/x")),
        ("$share/grp//a", ("grp", "/a")),
        ("a/b", (None, "a/b")),
        ("$share", (None, "$share")),
        ("$SHARE/grp/a", (None, "$SHARE/grp/a")),
        ("$shared/grp/a", (None, "$shared/grp/a")),
    ],
)
def test_parse_shared(topic_filter: str, expected: tuple[str | None, str]) -> None:
    """OASIS MQTT 5.0 4.8.2 (shared subscriptions, $share/{ShareName}/{filter}); README
    decision 5 (names are case sensitive, so '$SHARE' is an ordinary filter)."""
    assert parse_shared(topic_filter) == expected


@pytest.mark.parametrize(
    "topic_filter, reason",
    [
        ("$share/", topics.SHARE_NAME),
        ("$share//a", topics.SHARE_NAME),
        ("$share/g+/a", topics.SHARE_NAME),
        ("$share/#/a", topics.SHARE_NAME),
        ("$share/+/a", topics.SHARE_NAME),
        ("$share/grp", topics.SHARE_FILTER),
        ("$share/grp/", topics.SHARE_FILTER),
    ],
)
def test_parse_shared_refuses_bad_share_names_and_missing_filters(topic_filter: str, reason: str) -> None:
    """OASIS MQTT 5.0 4.8.2: a ShareName of at least one character without '/', '+', '#',
    followed by '/' and a topic filter [MQTT-4.8.2-1, 4.8.2-2]."""
    assert reason_of(parse_shared, topic_filter) == reason


@pytest.mark.parametrize(("topic", "reserved"), [
    ("$SYS", True), ("$SYS/broker/uptime", True), ("$ISYS", True), ("$ISYS/x", True),
    ("$SYS/STREAM/StreamX/Results", False), ("$SYSTEM/x", False), ("$share/g/t", False),
    ("sport/results", False), ("$SYS/STREAM", True),
])
def test_item_6_reserved_topics_except_streams(topic: str, reserved: bool) -> None:
    """pubsub.md item 6 (seed 003 l.3147-3157): only the broker publishes on $SYS and $ISYS;
    the stream topics under $SYS/STREAM/ (l.2405-2415) are ordinary topics under the ACLs."""
    from relaymq.pubsub.topics import reserved_for_broker

    assert reserved_for_broker(topic) is reserved
