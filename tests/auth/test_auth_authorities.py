"""The authority model of issue 15 (docs/security.md "The authorisation model"): generic
profiles as IBM MQ's, grants to principals and groups, administrators, when it is enforced,
and the file."""

from __future__ import annotations

import json

import pytest

from relaymq.auth.authorities import ANONYMOUS, Authorities, AuthorityError, AuthorityFile, qmgr_principal


@pytest.mark.parametrize(("profile", "name", "matches"), [
    ("APP.**", "APP", True), ("APP.**", "APP.IN.1", True), ("APP.**", "APPX", False),
    ("APP.*", "APP.IN", True), ("APP.*", "APP.IN.1", False), ("A?P", "APP", True), ("**", "ANY.THING", True),
    ("SYSTEM.DEAD.LETTER.QUEUE", "SYSTEM.DEAD.LETTER.QUEUE", True), ("APP.*.OUT", "APP.X.OUT", True),
])
def test_generic_profiles_as_setmqaut(profile: str, name: str, matches: bool) -> None:
    """seed 000 l.336-371 (queue authorities); MQ's generic profiles ?, *, **."""
    auth = Authorities(secured=True)
    auth.change("queue", profile, "bob", grant=["get"])
    assert auth.allows("bob", "queue", name, "get") is matches


def test_grants_groups_administrators_and_the_broker_itself() -> None:
    """issue 15 finding 6: nothing without a grant once secured; groups; administrators and
    the broker's own callers (principal None) hold everything."""
    auth = Authorities({"apps": ["bob"], "administrators": ["carol"]}, administrators=["root"], secured=True)
    assert not auth.allows("bob", "queue", "SYSTEM.DEAD.LETTER.QUEUE", "browse")
    auth.change("queue", "APP.**", "apps", group=True, grant=["put", "browse"])
    assert auth.allows("bob", "queue", "APP.IN", "put") and not auth.allows("bob", "queue", "APP.IN", "get")
    assert not auth.allows("alice", "queue", "APP.IN", "put")
    for admin in ("root", "carol", None):
        assert auth.allows(admin, "queue", "SYSTEM.DEAD.LETTER.QUEUE", "get")
    auth.change("admin", "*", "dora", grant=["admin"])
    assert auth.is_administrator("dora") and auth.allows("dora", "flow", "any", "deploy")
    assert auth.change("queue", "APP.**", "apps", group=True, revoke=["all"]) is None
    assert not auth.allows("bob", "queue", "APP.IN", "put")
    auth.change("queue", "**", qmgr_principal("QM2"), grant=["put"])
    assert auth.allows("qmgr:QM2", "queue", "X", "put") and not auth.allows(ANONYMOUS, "queue", "X", "put")


def test_not_enforced_without_credentials_or_grants() -> None:
    """Decision (docs/security.md): the README's loopback single-user set-up stays open."""
    assert Authorities().allows(ANONYMOUS, "queue", "ANY", "get")
    auth = Authorities()
    auth.change("flow", "**", "alice", grant=["deploy"])
    assert not auth.allows(ANONYMOUS, "queue", "ANY", "get")


def test_bad_rows_are_refused_by_name(tmp_path) -> None:
    with pytest.raises(AuthorityError, match="unknown authority 'fly'"):
        Authorities().change("queue", "A", "bob", grant=["fly"])
    path = tmp_path / "authorities.json"
    path.write_text(json.dumps({"authorities": [{"type": "queue", "profile": "A", "principal": "b",
                                                 "authorities": ["put"]}, {"type": "topic"}]}))
    with pytest.raises(AuthorityError, match=r"authorities\[1\]"):
        Authorities.load(str(path))


def test_the_file_is_reread_when_it_changes(tmp_path) -> None:
    """issue 15: `relaymq auth` in another process applies at the next request, no restart."""
    path = str(tmp_path / "authorities.json")
    running = AuthorityFile(path, secured=True)
    assert not running.allows("bob", "queue", "Q", "get")
    other = Authorities.load(path)
    other.change("queue", "Q", "bob", grant=["get"])
    other.save(path)
    assert running.allows("bob", "queue", "Q", "get")
    with open(path, "w") as handle:
        handle.write("{broken")
    assert running.allows("bob", "queue", "Q", "get") and "not JSON" in running.last_error
