"""relaymq.auth.acl.Acl on real ACL files.

Requirement (access brief): a mosquitto-like file where lines before any `user` apply to
anonymous clients, `user NAME` starts a user's section, `topic [read|write|readwrite] FILTER`
grants, `pattern` applies to every user with %c = client id and %u = user name; errors name
file:line; `can_publish`, `can_subscribe` (the rule filter must cover every topic the
requested filter could match) and `can_receive`; `Acl.allow_all()` without a file.
Topic semantics: README decision 2 (only exact `+`/`#` levels are wildcards; `$` topics are not
matched by a leading wildcard).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.auth.acl import Acl, AclError, filter_covers
from relaymq.pubsub.topics import topic_matches

BRIEF_EXAMPLE = """\
# lines before any "user" apply to anonymous clients
topic read public/#
user alice
topic readwrite sensors/#
topic write commands/+/set
pattern readwrite devices/%c/#      # %c = client id, %u = user name, for every user
"""


def _acl(tmp_path: Path, text: str) -> Acl:
    path = tmp_path / "acl"
    path.write_text(text)
    return Acl.load(str(path))


def test_brief_example(tmp_path: Path) -> None:
    """Brief: the example file, rule by rule."""
    acl = _acl(tmp_path, BRIEF_EXAMPLE)
    # anonymous section: read public/#, nothing else but patterns
    assert acl.can_receive(None, "c1", "public/news")
    assert acl.can_subscribe(None, "c1", "public/#")
    assert not acl.can_publish(None, "c1", "public/news")
    assert not acl.can_receive(None, "c1", "sensors/t1")
    # alice: her own section replaces the anonymous one
    assert acl.can_publish("alice", "c2", "sensors/t1") and acl.can_receive("alice", "c2", "sensors/t1")
    assert acl.can_publish("alice", "c2", "commands/door/set")
    assert not acl.can_receive("alice", "c2", "commands/door/set")  # write only
    assert not acl.can_subscribe("alice", "c2", "commands/+/set")
    assert not acl.can_receive("alice", "c2", "public/news")
    # pattern, after "user alice" but for every client, anonymous included
    for user in (None, "alice", "bob"):
        assert acl.can_publish(user, "dev7", "devices/dev7/state")
        assert acl.can_subscribe(user, "dev7", "devices/dev7/#")
        assert not acl.can_publish(user, "dev7", "devices/dev8/state")


def test_read_write_readwrite_and_default_access(tmp_path: Path) -> None:
    """Brief: read vs write vs readwrite; like mosquitto, no access word means readwrite."""
    acl = _acl(tmp_path, "topic read r\ntopic write w\ntopic readwrite rw\ntopic both\n")
    assert [acl.can_publish(None, "c", t) for t in ("r", "w", "rw", "both")] == [False, True, True, True]
    assert [acl.can_receive(None, "c", t) for t in ("r", "w", "rw", "both")] == [True, False, True, True]
    assert [acl.can_subscribe(None, "c", t) for t in ("r", "w", "rw", "both")] == [True, False, True, True]


def test_user_pattern_needs_a_user_name(tmp_path: Path) -> None:
    """Brief: %u is the user name; an anonymous client has none, so %u patterns give it nothing."""
    acl = _acl(tmp_path, "pattern readwrite users/%u/#\n")
    assert acl.can_publish("bob", "any", "users/bob/inbox")
    assert not acl.can_publish("bob", "any", "users/alice/inbox")
    assert not acl.can_publish(None, "any", "users//inbox")
    assert not acl.can_publish(None, "any", "users/%u/inbox")


@pytest.mark.parametrize("client_id", ["+", "#", "a/b", ""])
def test_pattern_values_cannot_widen_the_pattern(tmp_path: Path, client_id: str) -> None:
    """Security reading of the brief's %c: a client id containing '/', '+' or '#' (or empty)
    must not turn `devices/%c/#` into a wider filter, so the pattern does not apply."""
    acl = _acl(tmp_path, "pattern readwrite devices/%c/#\n")
    assert not acl.can_subscribe(None, client_id, "devices/+/#")
    assert not acl.can_subscribe(None, client_id, f"devices/{client_id}/#")
    assert not acl.can_publish(None, client_id, "devices/a/b/x")


@pytest.mark.parametrize(
    ("rule", "requested", "covered"),
    [
        ("a/#", "a/#", True),
        ("a/#", "a", True),
        ("a/#", "a/+/c", True),
        ("a/#", "b/#", False),
        ("a/+", "a/b", True),
        ("a/+", "a/+", True),
        ("a/+", "a/#", False),
        ("a/+", "a/b/c", False),
        ("a/b", "a/+", False),
        ("a/b", "a/b", True),
        ("+/b", "+/b", True),
        ("#", "#", True),
        ("#", "$SYS/#", False),
        ("+/x", "$SYS/x", False),
        ("$SYS/#", "$SYS/broker/+", True),
        ("a/#", "a/b#", True),   # 'b#' is a literal level (README decision 2)
        ("a/b+", "a/+", False),  # a literal 'b+' level does not cover a wildcard
        ("a/b+", "a/b+", True),
    ],
)
def test_subscribe_coverage(tmp_path: Path, rule: str, requested: str, covered: bool) -> None:
    """Brief: a subscription is allowed only if a read rule's filter covers the requested filter
    level by level ('+' covers any single level including '+', '#' covers the rest)."""
    assert filter_covers(rule, requested) is covered
    acl = _acl(tmp_path, f"topic read {rule}\n")
    assert acl.can_subscribe(None, "c", requested) is covered


def test_shared_subscription_is_judged_on_its_filter(tmp_path: Path) -> None:
    """MQTT 5 `$share/NAME/FILTER`: the ACL question is whether FILTER may be read."""
    acl = _acl(tmp_path, "topic read jobs/#\n")
    assert acl.can_subscribe(None, "c", "$share/workers/jobs/+")
    assert not acl.can_subscribe(None, "c", "$share/workers/other/+")


def test_comments_and_filters_that_look_like_comments(tmp_path: Path) -> None:
    """Brief's example has trailing `# ...` comments; a filter that *is* `#` is still a filter,
    and a filter with spaces is allowed when the access word is given."""
    acl = _acl(tmp_path, "topic read #   # everything\ntopic write my topic  # spaced\n")
    assert acl.can_receive(None, "c", "anything/at/all")
    assert acl.can_publish(None, "c", "my topic")
    assert not acl.can_publish(None, "c", "my")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("topic read a\nfrobnicate x\n", 2),        # unknown keyword
        ("user alice\ntopic raed x y\n", 2),        # misspelt access word with a spaced topic
        ("topic read\n", 1),                        # no filter
        ("topic read a/#/b\n", 1),                  # '#' not last
        ("\n\nuser\n", 3),                          # user without a name
        ("pattern write\n", 1),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    """Brief: Acl.load errors name file:line."""
    path = tmp_path / "acl"
    path.write_text(text)
    with pytest.raises(AclError) as caught:
        Acl.load(str(path))
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_allow_all(tmp_path: Path) -> None:
    """Brief: Acl.allow_all() for no file: everything allowed; an empty file allows nothing."""
    everything = Acl.allow_all()
    assert everything.can_publish(None, "c", "$SYS/x") and everything.can_subscribe("u", "c", "#")
    nothing = _acl(tmp_path, "# no rules\n")
    assert not nothing.can_publish(None, "c", "a") and not nothing.can_subscribe(None, "c", "a")


_levels = st.sampled_from(["a", "b", "+", "#", "$s"])
_filters = st.lists(_levels, min_size=1, max_size=4).map("/".join).filter(
    lambda f: "#" not in f.split("/")[:-1]
)
_topics = st.lists(st.sampled_from(["a", "b", "$s"]), min_size=1, max_size=5).map("/".join)


@settings(max_examples=300, deadline=None)
@given(rule=_filters, requested=_filters, topic=_topics)
def test_coverage_is_sound(rule: str, requested: str, topic: str) -> None:
    """Brief: "the rule filter must match every topic the requested filter could match":
    whenever filter_covers says yes, no topic matched by the request escapes the rule."""
    if filter_covers(rule, requested) and topic_matches(requested, topic):
        assert topic_matches(rule, topic)
