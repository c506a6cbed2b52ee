"""Topic names, topic filters and shared-subscription filters: validation and the reference matcher.

Why this module exists: README decision 2 says there is ONE matching engine for topics
(``topictree``) and that each front end validates before the engine. This module is that
validation, in the two flavours the front ends need, plus ``topic_matches``: a small,
obviously-correct matcher that the trees are tested against and that callers may use for a
single (filter, topic) check.

The rules, with where they come from (seed 003 line numbers):

- ``/`` separates levels; a leading ``/`` makes an empty first level, so ``/USA`` matches
  ``+/+`` and ``/+`` but not ``+`` (3116-3120).
- A level is a wildcard only when it is exactly ``+`` (one level, 3056-3062) or exactly ``#``
  (zero or more levels, so ``USA/#`` matches ``USA``, 3031-3043). ``USA#``, ``USA+`` and
  ``#+`` are literal levels (3045-3100).
- A topic whose first level starts with ``$`` is not matched by a filter whose first level is
  a wildcard (README decision 2; ``$SYS``/``$ISYS`` are reserved, 3147-3157).
- Names are case sensitive (3108-3110) and may contain any character, space included
  (3112-3114); matching is plain string equality per level.

Validation flavours:

- ``strict=True``: MQTT 3.1.1 / 5.0 (OASIS 4.7). A filter may use ``+``/``#`` only as whole
  levels, ``#`` only as the last level; a topic name may not contain ``+`` or ``#`` at all.
- ``strict=True, mixed_literal=True``: MQIsdp v3 clients (README decision 1: where the seed and
  3.1.1 differ, a v3 client gets the seed's behaviour). MQTT's rules, except that ``+``/``#``
  mixed into a level are literal (3045-3100), in topic names and in filters: ``USA#`` may be
  published and subscribed to, and matches only itself.
- ``strict=False``: the ``psc`` command interface (seed 003). ``+``/``#`` mixed into a level are
  literal (3045-3100); a level that is exactly a wildcard is refused in a published topic
  (3094-3096); ``//`` is refused (3122-3124); ``#`` may stand at any level of a subscription
  (pubsub.md, "Decisions on the seed's ambiguities"; seed 2668-2669: wildcards "can be used at
  any level").
- Both flavours refuse an empty topic (the virtual root ``""`` cannot be used, 3139-3145),
  a topic longer than ``max_length`` UTF-8 bytes, and U+0000. The seed only advises against
  U+0000 (1597, 3126); the product refuses it everywhere because a topic accepted on one
  front end may be delivered to an MQTT subscriber, whose UTF-8 strings must not contain it.
"""

from __future__ import annotations

#: Topic level separator (seed 003 l.2991-3001, 3017-3025).
LEVEL_SEPARATOR = "/"
#: Single-level wildcard, wild only as a whole level (seed 003 l.3056-3068).
SINGLE_LEVEL_WILDCARD = "+"
#: Multilevel wildcard, wild only as a whole level (seed 003 l.3031-3055).
MULTI_LEVEL_WILDCARD = "#"
#: Prefix of an MQTT 5.0 shared subscription filter (OASIS MQTT 5.0, 4.8.2).
SHARED_PREFIX = "$share/"

# Stable, machine-readable values of ``TopicError.reason``. Front ends map them to their own
# codes (MQTT 5 0x8F/0x90, SUBACK 0x80, psc 3072 TOPIC_ERROR); the text of the error is for humans.
EMPTY = "empty"
TOO_LONG = "too_long"
NULL_CHARACTER = "null_character"
WILDCARD_IN_NAME = "wildcard_in_name"
MIXED_WILDCARD = "mixed_wildcard"
MULTI_LEVEL_NOT_LAST = "multi_level_not_last"
EMPTY_LEVEL = "empty_level"
SHARE_NAME = "share_name"
SHARE_FILTER = "share_filter"

_WILDCARDS = (SINGLE_LEVEL_WILDCARD, MULTI_LEVEL_WILDCARD)


class TopicError(ValueError):
    """A topic name, topic filter or shared-subscription filter is not acceptable.

    ``reason`` is one of this module's reason constants (``EMPTY``, ``TOO_LONG``, ...), so that
    each front end can map the failure to its own code without parsing the message.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _check_common(topic: str, max_length: int, what: str) -> None:
    """Rules every topic string obeys, name or filter, strict or not."""
    if not topic:
        raise TopicError(EMPTY, f"{what} is empty")
    # len(str) <= UTF-8 length, so a too-long string is caught without encoding; otherwise
    # count bytes ('surrogatepass': surrogate policy belongs to the protocol codecs).
    if len(topic) > max_length or len(topic.encode("utf-8", "surrogatepass")) > max_length:
        raise TopicError(TOO_LONG, f"{what} is longer than {max_length} UTF-8 bytes")
    if "\x00" in topic:
        raise TopicError(NULL_CHARACTER, f"{what} contains U+0000")


def validate_topic_name(topic: str, max_length: int = 65535, *, strict: bool = True,
                        mixed_literal: bool = False) -> None:
    """Check a topic that a message is published on; raise ``TopicError`` if it is not valid.

    strict=True (MQTT 3.1.1/5.0): ``+`` and ``#`` may not appear anywhere; with
    ``mixed_literal`` (MQIsdp v3) only a level that is exactly ``+`` or ``#`` is refused.
    strict=False (psc Publish, seed 003 l.3086-3100): only a level that is exactly ``+`` or
    ``#`` is refused; ``USA#`` is a literal level and may be published. ``//`` is refused
    (3122-3124: such a name "is not a valid name").
    """
    _check_common(topic, max_length, "topic name")
    if SINGLE_LEVEL_WILDCARD not in topic and MULTI_LEVEL_WILDCARD not in topic:
        if not strict and "//" in topic:
            raise TopicError(EMPTY_LEVEL, f"topic name {topic!r} contains '//'")
        return
    if strict and not mixed_literal:
        raise TopicError(WILDCARD_IN_NAME, f"topic name {topic!r} contains a wildcard character")
    if not strict and "//" in topic:
        raise TopicError(EMPTY_LEVEL, f"topic name {topic!r} contains '//'")
    for level in topic.split(LEVEL_SEPARATOR):
        if level in _WILDCARDS:
            raise TopicError(WILDCARD_IN_NAME, f"topic name {topic!r} has a wildcard level {level!r}")


def validate_topic_filter(topic_filter: str, strict: bool = True, max_length: int = 65535, *,
                          mixed_literal: bool = False) -> None:
    """Check a subscription's topic filter; raise ``TopicError`` if it is not valid.

    strict=True (MQTT 3.1.1/5.0): ``+`` and ``#`` only as whole levels, ``#`` only last; with
    ``mixed_literal`` (MQIsdp v3) a level mixing a wildcard character with others is literal.
    strict=False (psc, seed 003 l.3045-3100 and pubsub.md decisions): a level mixing a
    wildcard character with others is literal; ``#`` may be any whole level; ``//`` refused.

    A shared filter (``$share/...``) is split with ``parse_shared`` first and its filter part
    validated here; this function treats ``$share`` as an ordinary level.
    """
    _check_common(topic_filter, max_length, "topic filter")
    if not strict:
        if "//" in topic_filter:
            raise TopicError(EMPTY_LEVEL, f"topic filter {topic_filter!r} contains '//'")
        return
    if SINGLE_LEVEL_WILDCARD not in topic_filter and MULTI_LEVEL_WILDCARD not in topic_filter:
        return
    levels = topic_filter.split(LEVEL_SEPARATOR)
    last = len(levels) - 1
    for index, level in enumerate(levels):
        if level == MULTI_LEVEL_WILDCARD:
            if index != last:
                raise TopicError(
                    MULTI_LEVEL_NOT_LAST, f"topic filter {topic_filter!r}: '#' must be the last level"
                )
        elif not mixed_literal and level != SINGLE_LEVEL_WILDCARD and (
            SINGLE_LEVEL_WILDCARD in level or MULTI_LEVEL_WILDCARD in level
        ):
            raise TopicError(
                MIXED_WILDCARD,
                f"topic filter {topic_filter!r}: level {level!r} mixes a wildcard with other characters",
            )


def parse_shared(topic_filter: str) -> tuple[str | None, str]:
    """Split an MQTT 5.0 shared subscription ``$share/<name>/<filter>`` into (name, filter).

    A filter that does not start with ``$share/`` is returned as ``(None, topic_filter)``.
    The share name must be non-empty and free of ``/``, ``+``, ``#`` (and U+0000); the filter
    part must be non-empty. The filter part is not validated here: pass it to
    ``validate_topic_filter``.
    """
    if not topic_filter.startswith(SHARED_PREFIX):
        return None, topic_filter
    share_name, separator, inner = topic_filter[len(SHARED_PREFIX):].partition(LEVEL_SEPARATOR)
    if not share_name:
        raise TopicError(SHARE_NAME, f"shared subscription {topic_filter!r} has an empty share name")
    for forbidden in (SINGLE_LEVEL_WILDCARD, MULTI_LEVEL_WILDCARD, "\x00"):
        if forbidden in share_name:
            raise TopicError(
                SHARE_NAME, f"shared subscription {topic_filter!r}: share name contains {forbidden!r}"
            )
    if not separator or not inner:
        raise TopicError(SHARE_FILTER, f"shared subscription {topic_filter!r} has no topic filter")
    return share_name, inner


#: Streams are topics under this prefix (seed 003 l.2405-2415): governed by the topic ACLs,
#: not reserved like the rest of $SYS.
STREAM_PREFIX = "$SYS/STREAM/"


def reserved_for_broker(topic: str) -> bool:
    """May only the broker publish on ``topic``? ``$SYS`` and ``$ISYS`` are its own
    (pubsub.md item 6, seed 003 l.3147-3157), except the stream topics under ``$SYS/STREAM/``,
    which the topic ACLs govern. Every front end (MQTT, REST, psc) asks this one function."""
    if topic == "$ISYS" or topic.startswith("$ISYS/"):
        return True
    if topic == "$SYS" or topic.startswith("$SYS/"):
        return not topic.startswith(STREAM_PREFIX)
    return False


def is_dollar_topic(topic: str) -> bool:
    """True if a topic's first level starts with ``$`` (``$SYS``, ``$ISYS``, ``$share``...),
    which a filter starting with a wildcard level does not match (README decision 2)."""
    return topic.startswith("$")


def topic_matches(topic_filter: str, topic: str) -> bool:
    """Reference semantics: does ``topic_filter`` match ``topic``?

    Written as a set-of-positions automaton over the filter's levels, independent of the
    trees, so that the trees can be checked against it. ``#`` at any level matches zero or more
    topic levels (so it also covers the psc rule and ``a/#`` matching ``a``); ``+`` exactly one;
    any other level, including ``USA#``, only itself. Cost is O(levels(filter) x levels(topic)).
    """
    filter_levels = topic_filter.split(LEVEL_SEPARATOR)
    if is_dollar_topic(topic) and filter_levels[0] in _WILDCARDS:
        return False
    end = len(filter_levels)

    def closure(positions: set[int]) -> set[int]:
        # A '#' may match zero levels: being before it also means being after it.
        result = set(positions)
        for position in sorted(positions):
            while position < end and filter_levels[position] == MULTI_LEVEL_WILDCARD:
                position += 1
                result.add(position)
        return result

    positions = closure({0})
    for level in topic.split(LEVEL_SEPARATOR):
        following: set[int] = set()
        for position in positions:
            if position == end:
                continue
            filter_level = filter_levels[position]
            if filter_level == MULTI_LEVEL_WILDCARD:
                following.add(position)  # '#' consumes this level and may consume more
            elif filter_level in (SINGLE_LEVEL_WILDCARD, level):
                following.add(position + 1)
        if not following:
            return False
        positions = closure(following)
    return end in positions
