"""Topic ACLs (pubsub.md items 6 and 38; seed 003 l.1288-1332, 2411-2486, 3147-3157)."""

from __future__ import annotations

import pytest

from relaymq.pubsub import reasons as r
from relaymq.pubsub.topicacl import PERSISTENT, PUBLISH, SUBSCRIBE, AclEntry, TopicAcl

from psc_helpers import make_engine, send


def stream_acl() -> TopicAcl:
    """The seed's stream scenario (2422-2486): PublicGroup denied at the root; PDefault and
    SDefault granted there and denied on $SYS/STREAM/; StreamX/StreamY groups granted on
    their own stream."""
    acl = TopicAcl.default()
    acl.groups = {"PDefault": {"pd"}, "SDefault": {"sd"}, "PStreamX": {"px"}, "SStreamX": {"sx"},
                  "PStreamY": {"py"}, "SStreamY": {"sy"}}
    acl.set(AclEntry(" ", "PublicGroup", "deny", "deny", "deny"))
    acl.set(AclEntry(" ", "PDefault", publish="allow"))
    acl.set(AclEntry(" ", "SDefault", subscribe="allow"))
    acl.set(AclEntry("$SYS/STREAM/", "PDefault", publish="deny"))
    acl.set(AclEntry("$SYS/STREAM/", "SDefault", subscribe="deny"))
    for stream in ("X", "Y"):
        acl.set(AclEntry(f"$SYS/STREAM/Stream{stream}/", f"PStream{stream}", publish="allow"))
        acl.set(AclEntry(f"$SYS/STREAM/Stream{stream}/", f"SStream{stream}", subscribe="allow"))
    return acl


@pytest.mark.parametrize("user, topic, permission, allowed", [
    ("pd", "News/Today", PUBLISH, True),
    ("pd", "$SYS/STREAM/StreamX/News", PUBLISH, False),
    ("px", "$SYS/STREAM/StreamX/News", PUBLISH, True),
    ("px", "$SYS/STREAM/StreamY/News", PUBLISH, False),
    ("px", "News/Today", PUBLISH, False),
    ("sd", "News/Today", SUBSCRIBE, True),
    ("sd", "$SYS/STREAM/StreamY/News", SUBSCRIBE, False),
    ("sy", "$SYS/STREAM/StreamY/News", SUBSCRIBE, True),
    ("nobody", "News/Today", SUBSCRIBE, False),
])
def test_item_38_stream_scenario(user, topic, permission, allowed):
    """pubsub.md item 38; seed 003 l.2422-2486: each grant and denial of the scenario."""
    assert stream_acl().allowed(user, topic, permission) is allowed


def test_item_38_exception_overrides_parent_denial():
    """pubsub.md item 38; seed 003 l.2470-2478: an explicit ACL for PDefault on StreamX
    overrides the denial on $SYS/STREAM/, not on StreamY."""
    acl = stream_acl()
    acl.set(AclEntry("$SYS/STREAM/StreamX/", "PDefault", publish="allow"))
    assert acl.allowed("pd", "$SYS/STREAM/StreamX/a", PUBLISH)
    assert not acl.allowed("pd", "$SYS/STREAM/StreamY/a", PUBLISH)


def test_item_38_user_entry_beats_group_and_public_default():
    """pubsub.md item 38; seed 003 l.1288-1332: PublicGroup at the root allows all by
    default; a user's own entry decides over its groups at the same node."""
    acl = TopicAcl.default()
    assert acl.explain(None, "any/topic") == {PUBLISH: True, SUBSCRIBE: True, PERSISTENT: True}
    acl.groups["Staff"] = {"carol"}
    acl.set(AclEntry("Pay", "Staff", subscribe="deny"))
    acl.set(AclEntry("Pay", "carol", subscribe="allow"))
    assert acl.allowed("carol", "Pay/2024", SUBSCRIBE)
    acl.groups["Staff"].add("dave")
    assert not acl.allowed("dave", "Pay/2024", SUBSCRIBE)
    assert acl.remove("Pay", "carol") and not acl.allowed("carol", "Pay/2024", SUBSCRIBE)


def test_item_6_sys_and_isys_belong_to_the_broker():
    """pubsub.md item 6; seed 003 l.3147-3157: with topic security, nobody else publishes
    on $SYS or $ISYS, nor subscribes to $ISYS; $SYS/STREAM is left to the ACLs."""
    acl = TopicAcl.default()
    assert not acl.allowed("root", "$SYS/Broker/x", PUBLISH)
    assert acl.allowed("root", "$SYS/Broker/x", SUBSCRIBE)
    assert not acl.allowed("root", "$ISYS/x", SUBSCRIBE)
    assert not acl.may_subscribe("root", "$ISYS/#")
    assert acl.allowed("root", "$SYS/STREAM/S/x", PUBLISH)
    assert TopicAcl.default(enabled=False).allowed("root", "$ISYS/x", PUBLISH)


def test_item_38_wildcard_subscription_sees_only_permitted_topics():
    """pubsub.md item 38; seed 003 l.1893-1899: a '#' subscription is accepted and delivers
    only topics the subscriber may subscribe to; no Persistent authority means non-persistent
    delivery."""
    acl = TopicAcl.default()
    acl.set(AclEntry("Private", "PublicGroup", subscribe="deny"))
    acl.set(AclEntry("Cheap", "PublicGroup", persistent="deny"))
    e = make_engine(acl=acl)
    assert send(e, "RegSub", Topic="#", reply_to="S", RegOpt="Pers").completion == "ok"
    assert send(e, "RegSub", Topic="Private/x", reply_to="S").reasons == [r.NOT_AUTHORIZED]
    res = send(e, "Publish", Topic=["Private/x", "Public/x", "Cheap/x"], body=b"v")
    assert sorted(res.topics_to("S")) == ["Cheap/x", "Public/x"]
    persistence = {m.mq.first_rfh2().get("psc.Topic"): m.mq.md.Persistence for m in res.to("S")}
    assert persistence == {"Public/x": 1, "Cheap/x": 0}


def test_item_38_round_trip_through_data():
    """The ACL file format (relaymq acl set/remove) keeps groups and rows."""
    acl = stream_acl()
    copy = TopicAcl.from_data(acl.to_data())
    assert copy.to_data() == acl.to_data()


def test_item_38_wildcard_subscription_refused_when_it_can_deliver_nothing():
    """pubsub.md items 36, 38; seed 003 l.1893-1899, 2405-2486: a wildcard subscription is
    accepted when some topic under it may be delivered (``#``, ``News/#`` for SDefault), and
    refused (3081) when its literal part is denied and no row below allows the user
    (``$SYS/STREAM/StreamX/#`` for SDefault, ``News/#`` for SStreamX)."""
    acl = stream_acl()
    assert acl.may_subscribe("sd", "#") and acl.may_subscribe("sd", "News/#")
    assert not acl.may_subscribe("sd", "$SYS/STREAM/StreamX/#")
    assert not acl.may_subscribe("sx", "News/#")
    assert acl.may_subscribe("sx", "$SYS/STREAM/StreamX/#") and acl.may_subscribe("sx", "$SYS/STREAM/+/News")
    assert acl.may_subscribe("sx", "$SYS/#")  # StreamX under it is the user's
    assert not acl.may_subscribe("sd", "$SYS/STREAM/+/News")
    e = make_engine(acl=acl)
    assert send(e, "RegSub", Topic="$SYS/STREAM/StreamX/#", reply_to="S", user_id="sd").reasons == [r.NOT_AUTHORIZED]
    assert send(e, "RegSub", Topic="$SYS/STREAM/StreamX/#", reply_to="S2", user_id="sx").completion == "ok"


class _AskedAcl(TopicAcl):
    """The topic ACL, recording who it was asked about (a real TopicAcl underneath)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.asked: list[tuple[str | None, str]] = []

    def allowed(self, user: str | None, topic: str, permission: str) -> bool:
        self.asked.append((user, permission))
        return super().allowed(user, topic, permission)


def test_item_38_a_live_publication_asks_each_owner_once_and_delivers_as_each_subscription_would():
    """pubsub.md item 38 at delivery, and item 17 (filters): a live publication asks whether
    an owner may read its topic once per owner (issue 14: every copy asked, for thousands of
    subscriptions of a few users), and still delivers exactly to the subscriptions that
    ``Delivery.selected`` selects one by one."""
    import itertools

    from relaymq.pubsub.delivery import Delivery
    from relaymq.pubsub.model import Publication, QueueSubscription, SubscriberId
    from relaymq.selector import compile_selector

    acl = _AskedAcl.default()
    acl.groups = {"Readers": {"alice"}}
    acl.set(AclEntry("Private", "PublicGroup", subscribe="deny"))
    acl.set(AclEntry("Private", "Readers", subscribe="allow"))
    owners = [("alice", ""), ("bob", ""), ("alice", "usr.level > 5"), ("bob", "usr.level > 5"),
              ("alice", "usr.level < 5"), ("", ""), ("alice", "")]
    subs = [QueueSubscription("Private/#", "", text, SubscriberId("QM1", f"Q{n}"), user,
                              selector=compile_selector(text) if text else None)
            for n, (user, text) in enumerate(owners)]
    pub = Publication("Private/x", b"v", usr=[("level", "7")], untyped_usr=True)
    ids = itertools.count(1)
    delivery = Delivery("QM1", lambda: next(ids).to_bytes(24, "big"), acl, None)
    copies, _ = delivery.live(pub, [(sub.tree_key, sub) for sub in subs], 0.0)
    assert sorted({user for user, permission in acl.asked if permission == SUBSCRIBE}, key=str) == [None, "alice", "bob"]
    assert len([1 for _, permission in acl.asked if permission == SUBSCRIBE]) == 3
    assert [c.queue for c in copies] == [s.subscriber.queue for s in subs if delivery.selected(s, pub)]
    assert [c.queue for c in copies] == ["Q0", "Q2", "Q6"]
