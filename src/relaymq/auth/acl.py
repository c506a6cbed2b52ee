"""The ACL file: which user may publish to, subscribe to and receive from which topics.

Why this shape: operators who run mosquitto already know the format, so the file reads the
same way::

    # rules before any "user" line apply to anonymous clients (no user name)
    topic read public/#
    user alice
    topic readwrite sensors/#
    topic write commands/+/set
    pattern readwrite devices/%c/#      # for every client: %c = client id, %u = user name

- ``topic [read|write|readwrite] FILTER`` grants access to FILTER (readwrite when the access
  word is left out) to the current section: anonymous clients before the first ``user``
  line, otherwise the user named by the last ``user NAME`` line. A user's section replaces
  the anonymous one; it does not add to it.
- ``pattern [read|write|readwrite] FILTER`` applies to every client wherever it stands, with
  ``%c`` replaced by the client id and ``%u`` by the user name. A pattern does not apply when
  the value would change the filter's shape: no user name for ``%u``, or a value containing
  ``/``, ``+`` or ``#`` (otherwise a client called ``+`` would get every device's topics).
- ``#`` after white space starts a comment. A topic containing spaces needs the access word
  (``topic read my topic``), so that a misspelt access word is an error, not a new topic.
- ``deny`` rules are not supported: everything not granted is refused.

Three questions are asked, all with the same rules: may this client publish to a topic
(write), may it subscribe to a filter (read, and the filter must be *covered*, see
``filter_covers``), and may a message on a concrete topic be delivered to it (read; checked
at delivery, because a subscription such as ``#`` granted by a broad rule still must not
leak topics a narrower rule set would refuse). Answers are cached in a bounded dict because
``can_receive`` runs once per delivered message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from relaymq.pubsub.topics import (
    LEVEL_SEPARATOR,
    MULTI_LEVEL_WILDCARD,
    SINGLE_LEVEL_WILDCARD,
    TopicError,
    is_dollar_topic,
    parse_shared,
    topic_matches,
)

READ = 1
WRITE = 2
_ACCESS = {"read": READ, "write": WRITE, "readwrite": READ | WRITE}
_COMMENT = re.compile(r"\s+#.*$")
_UNSAFE_IN_VALUE = (LEVEL_SEPARATOR, SINGLE_LEVEL_WILDCARD, MULTI_LEVEL_WILDCARD, "\x00")
_CACHE_SIZE = 8192


class AclError(ValueError):
    """An ACL file cannot be read or has a bad line; the text is ``file:line: problem``."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Rule:
    """One ``topic`` or ``pattern`` line: the access it grants and the filter it grants it on."""

    access: int
    topic_filter: str
    pattern: bool
    line: int

    def filter_for(self, username: str | None, client_id: str) -> str | None:
        """The filter this rule grants to this client, or None if the rule does not apply."""
        if not self.pattern:
            return self.topic_filter
        result = self.topic_filter
        for placeholder, value in (("%c", client_id), ("%u", username)):
            if placeholder in result:
                if not value or any(part in value for part in _UNSAFE_IN_VALUE):
                    return None
                result = result.replace(placeholder, value)
        return result


def filter_covers(rule_filter: str, requested: str) -> bool:
    """Does every topic that ``requested`` can match also match ``rule_filter``?

    Level by level: ``#`` in the rule covers whatever remains (``a/#`` covers ``a``, ``a/+``
    and ``a/#``); ``+`` in the rule covers any one level, ``+`` included; a literal level covers
    only itself. A requested ``#`` is covered only by a rule's ``#``. A rule starting with a
    wildcard covers nothing under ``$`` topics, as matching does not reach them.
    """
    rule = rule_filter.split(LEVEL_SEPARATOR)
    wanted = requested.split(LEVEL_SEPARATOR)
    if is_dollar_topic(requested) and rule[0] in (SINGLE_LEVEL_WILDCARD, MULTI_LEVEL_WILDCARD):
        return False
    for index, level in enumerate(rule):
        if level == MULTI_LEVEL_WILDCARD:
            return True
        if index >= len(wanted) or wanted[index] == MULTI_LEVEL_WILDCARD:
            return False
        if level != SINGLE_LEVEL_WILDCARD and level != wanted[index]:
            return False
    return len(wanted) == len(rule)


def _strip_comment(text: str) -> str:
    """Drop a trailing comment: ``#`` after white space (a leading ``#`` is a filter)."""
    return _COMMENT.sub("", text).strip()


def _parse_rule(path: str, number: int, keyword: str, rest: str) -> Rule:
    words = rest.split(None, 1)
    if words and words[0] in _ACCESS:
        access = _ACCESS[words[0]]
        topic_filter = _strip_comment(words[1]) if len(words) == 2 else ""
    else:
        access, topic_filter = READ | WRITE, _strip_comment(rest)
        if any(c.isspace() for c in topic_filter):
            raise AclError(
                path, f"unknown access {words[0]!r} (expected read, write or readwrite)", number
            )
    if not topic_filter:
        raise AclError(path, f"'{keyword}' needs a topic filter", number)
    # Any level is a literal except exactly '+' and '#' ('USA#' is literal, README decision 2;
    # empty levels are legal MQTT). filter_covers relies on '#' closing the rule: a '#' in the
    # middle would grant more than it says.
    if "\x00" in topic_filter:
        raise AclError(path, f"topic filter {topic_filter!r} contains U+0000", number)
    if MULTI_LEVEL_WILDCARD in topic_filter.split(LEVEL_SEPARATOR)[:-1]:
        raise AclError(path, f"topic filter {topic_filter!r}: '#' must be the last level", number)
    return Rule(access, topic_filter, keyword == "pattern", number)


class Acl:
    """The parsed rules; ``Acl.allow_all()`` when no ACL file is configured."""

    def __init__(
        self,
        anonymous: list[Rule],
        users: dict[str, list[Rule]],
        patterns: list[Rule],
        *,
        allow_everything: bool = False,
    ) -> None:
        self._anonymous = tuple(anonymous)
        self._users = {user: tuple(rules) for user, rules in users.items()}
        self._patterns = tuple(patterns)
        self.allows_everything = allow_everything
        self._cache: dict[tuple[int, str | None, str, str], bool] = {}

    @classmethod
    def allow_all(cls) -> Acl:
        """No ACL file: every client may do everything."""
        return cls([], {}, [], allow_everything=True)

    @classmethod
    def load(cls, path: str) -> Acl:
        """Read an ACL file; raise AclError naming the file and line of the first bad line."""
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError as error:
            raise AclError(path, f"cannot read: {error.strerror or error}") from None
        except UnicodeDecodeError:
            raise AclError(path, "not a UTF-8 text file") from None
        anonymous: list[Rule] = []
        users: dict[str, list[Rule]] = {}
        patterns: list[Rule] = []
        section = anonymous
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            words = line.split(None, 1)
            keyword, rest = words[0], words[1] if len(words) == 2 else ""
            if keyword == "user":
                rest = _strip_comment(rest)
                if not rest:
                    raise AclError(path, "'user' needs a user name", number)
                section = users.setdefault(rest, [])
            elif keyword == "topic":
                section.append(_parse_rule(path, number, keyword, rest))
            elif keyword == "pattern":
                patterns.append(_parse_rule(path, number, keyword, rest))
            else:
                raise AclError(path, f"unknown keyword {keyword!r} (expected user, topic or pattern)", number)
        return cls(anonymous, users, patterns)

    def can_publish(self, username: str | None, client_id: str, topic: str) -> bool:
        """May this client publish a message on ``topic`` (a topic name, no wildcards)?"""
        return self._allowed(WRITE, username, client_id, topic)

    def can_receive(self, username: str | None, client_id: str, topic: str) -> bool:
        """May a message published on ``topic`` be delivered to this client?"""
        return self._allowed(READ, username, client_id, topic)

    def can_subscribe(self, username: str | None, client_id: str, topic_filter: str) -> bool:
        """May this client subscribe to ``topic_filter``? Only if one read rule covers all of
        it; an MQTT 5 shared subscription ``$share/NAME/FILTER`` is judged on FILTER."""
        if self.allows_everything:
            return True
        try:
            _, inner = parse_shared(topic_filter)
        except TopicError:
            return False
        return self._cached(
            (0, username, client_id, inner),
            lambda: self._grants(READ, username, client_id, lambda granted: filter_covers(granted, inner)),
        )

    def _allowed(self, access: int, username: str | None, client_id: str, topic: str) -> bool:
        if self.allows_everything:
            return True
        return self._cached(
            (access, username, client_id, topic),
            lambda: self._grants(access, username, client_id, lambda granted: topic_matches(granted, topic)),
        )

    def _grants(
        self, access: int, username: str | None, client_id: str, accepts: Callable[[str], bool]
    ) -> bool:
        """Is there a rule for this client with ``access`` whose filter ``accepts`` the request?
        A user's own section (or the anonymous one) first, then the patterns."""
        own = self._anonymous if username is None else self._users.get(username, ())
        for rule in own + self._patterns:
            if rule.access & access:
                granted = rule.filter_for(username, client_id)
                if granted is not None and accepts(granted):
                    return True
        return False

    def _cached(self, key: tuple[int, str | None, str, str], decide: Callable[[], bool]) -> bool:
        answer = self._cache.get(key)
        if answer is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()  # bounded: a flood of distinct topics cannot grow it
            answer = self._cache[key] = decide()
        return answer
