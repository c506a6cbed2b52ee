"""Retained publications by topic (relaymq.pubsub.retained).

Line numbers are in /work/shared/seeds/003_a8ffa67dc270420a.txt; "README", "pubsub.md" and
"mqtt.md" are in /work/shared/spec/.
"""

from __future__ import annotations

from relaymq.pubsub.retained import RetainedTree

TOPICS = [
    "USA",
    "USA/Alaska",
    "USA/Alaska/Juneau",
    "USA/Alabama",
    "USA/Alabama/Auburn",
    "USA#",
    "/USA",
    "$SYS/Broker",
    "$SYS",
    "a//b",
    "ACCOUNTS",
]


def make() -> RetainedTree[str]:
    tree: RetainedTree[str] = RetainedTree()
    for topic in TOPICS:
        tree.set(topic, "v:" + topic)
    return tree


def topics_of(tree: RetainedTree[str], topic_filter: str) -> list[str]:
    found = list(tree.match(topic_filter))
    for topic, value in found:
        assert value == "v:" + topic
    names = [topic for topic, _ in found]
    assert len(names) == len(set(names)), "a topic was yielded twice"
    return sorted(names)


def test_one_value_per_topic_and_a_new_one_replaces_it() -> None:
    """pubsub.md 21; seed 003 l.2519-2527 (a new retained publication replaces the old one)."""
    tree: RetainedTree[int] = RetainedTree()
    assert tree.set("a/b", 1) is True
    assert tree.set("a/b", 2) is False
    assert len(tree) == 1
    assert tree.get("a/b") == 2
    assert list(tree.match("a/b")) == [("a/b", 2)]


def test_get_is_exact_and_none_when_absent() -> None:
    """pubsub.md 2 (case sensitive, seed 003 l.3108-3110), 3 ('/USA' != 'USA', l.3116-3120)."""
    tree = make()
    assert tree.get("USA") == "v:USA"
    assert tree.get("/USA") == "v:/USA"
    assert tree.get("Accounts") is None
    assert tree.get("USA/+") is None
    assert tree.get("USA/Alaska/Juneau/x") is None
    assert "ACCOUNTS" in tree and "Accounts" not in tree


def test_none_is_a_storable_value() -> None:
    """pubsub.md 21 (whatever the caller retains is kept): a stored None counts and matches."""
    tree: RetainedTree[None] = RetainedTree()
    tree.set("a", None)
    assert len(tree) == 1 and "a" in tree
    assert list(tree.match("#")) == [("a", None)]
    assert tree.delete("a") is True


def test_seed_wildcard_examples() -> None:
    """pubsub.md 7, 8, 11; seed 003 l.3031-3043 ('USA/Alaska/#', 'USA/#' includes 'USA'),
    l.3056-3062 ('USA/+' is one level only), l.2680-2682 ('+/Alabama/#')."""
    tree = make()
    assert topics_of(tree, "USA/Alaska/#") == ["USA/Alaska", "USA/Alaska/Juneau"]
    assert topics_of(tree, "USA/#") == [
        "USA",
        "USA/Alabama",
        "USA/Alabama/Auburn",
        "USA/Alaska",
        "USA/Alaska/Juneau",
    ]
    assert topics_of(tree, "USA/+") == ["USA/Alabama", "USA/Alaska"]
    assert topics_of(tree, "+/Alabama/#") == ["USA/Alabama", "USA/Alabama/Auburn"]


def test_literal_wildcard_levels() -> None:
    """README decision 2; pubsub.md 9; seed 003 l.3045-3100: 'USA#' is a literal level."""
    tree = make()
    assert topics_of(tree, "USA#") == ["USA#"]
    assert topics_of(tree, "USA+") == []


def test_hash_skips_dollar_topics_and_plus_too() -> None:
    """README decision 2; pubsub.md 6; seed 003 l.3147-3157: '#' and '+'-first filters do
    not match '$SYS' topics; a filter starting with '$SYS' does."""
    tree = make()
    everything = [topic for topic in TOPICS if not topic.startswith("$")]
    assert topics_of(tree, "#") == sorted(everything)
    assert topics_of(tree, "+") == ["ACCOUNTS", "USA", "USA#"]
    assert topics_of(tree, "+/Broker") == []
    assert topics_of(tree, "#/Broker") == []
    assert topics_of(tree, "$SYS/#") == ["$SYS", "$SYS/Broker"]
    assert topics_of(tree, "$SYS/+") == ["$SYS/Broker"]


def test_empty_levels_are_real_levels() -> None:
    """pubsub.md 3; seed 003 l.3116-3120: '/USA' matches '+/+' and '/+' but not '+'."""
    tree = make()
    assert topics_of(tree, "+/+") == ["/USA", "USA/Alabama", "USA/Alaska"]
    assert topics_of(tree, "/+") == ["/USA"]
    assert topics_of(tree, "a/+/b") == ["a//b"]
    assert topics_of(tree, "a//b") == ["a//b"]


def test_multilevel_wildcard_in_the_middle() -> None:
    """pubsub.md decisions: '#' at any level of a psc filter matches zero or more levels; each
    retained topic is yielded once however many ways it matches."""
    tree: RetainedTree[str] = RetainedTree()
    for topic in ["a/c", "a/b/c", "a/c/c", "a/b/c/d", "c", "$x/c"]:
        tree.set(topic, "v:" + topic)
    assert topics_of(tree, "a/#/c") == ["a/b/c", "a/c", "a/c/c"]
    assert topics_of(tree, "#/c") == ["a/b/c", "a/c", "a/c/c", "c"]
    assert topics_of(tree, "a/#/#") == ["a/b/c", "a/b/c/d", "a/c", "a/c/c"]


def test_literal_filter_walks_one_path() -> None:
    """Brief ('do not scan everything for a literal filter'); pubsub.md 24 (Request Update
    sends all matching retained publications): a literal filter visits only its own path,
    observed by deleting siblings during iteration changing nothing and by the answer for a
    filter with no wildcard being the single exact topic."""
    tree: RetainedTree[int] = RetainedTree()
    for n in range(1000):
        tree.set(f"t/{n}", n)
    visited = []

    class Spy(dict):
        def items(self):  # a '+' or '#' walk would call this
            visited.append(True)
            return super().items()

    tree._root.children["t"].children = Spy(tree._root.children["t"].children)
    assert list(tree.match("t/500")) == [("t/500", 500)]
    assert visited == []
    assert len(list(tree.match("t/+"))) == 1000
    assert visited != []


def test_delete_returns_whether_there_was_a_value_and_prunes() -> None:
    """pubsub.md 25 (Delete Publication); design.md ('Bounded everything': no memory growth
    with churn): after deleting everything no node is left below the root."""
    tree = make()
    assert tree.delete("USA/Alaska/Juneau/x") is False
    assert tree.delete("USA/Alaska/Ju") is False
    for _ in range(2):
        for topic in TOPICS:
            tree.set(topic, "v:" + topic)
        for topic in TOPICS:
            assert tree.delete(topic) is True
            assert tree.delete(topic) is False
    assert len(tree) == 0
    assert tree._root.children == {}


def test_delete_keeps_nodes_still_in_use() -> None:
    """pubsub.md 21 (a retained publication stays until replaced or deleted): deleting 'USA'
    keeps 'USA/Alaska' and its children."""
    tree = make()
    tree.delete("USA")
    tree.delete("USA/Alaska")
    assert tree.get("USA") is None
    assert topics_of(tree, "USA/#") == ["USA/Alabama", "USA/Alabama/Auburn", "USA/Alaska/Juneau"]


def test_set_and_delete_while_iterating_is_safe() -> None:
    """pubsub.md 22 (expiry counts down while stored: a caller drops an expired publication
    while walking a match): set/delete during iteration raise nothing, a topic deleted before
    the walk reaches it is not yielded, every other matching topic is yielded once."""
    tree = make()
    matching = {topic for topic in TOPICS if not topic.startswith("$")}
    seen: list[str] = []
    deleted: str | None = None
    for topic, _ in tree.match("#"):
        seen.append(topic)
        if deleted is None:
            deleted = sorted(matching - set(seen))[0]
            assert tree.delete(deleted) is True
        tree.set("new/" + topic, "v")
    originals = [topic for topic in seen if not topic.startswith("new/")]
    assert deleted is not None and deleted not in seen
    assert sorted(originals) == sorted(matching - {deleted})
    assert len(seen) == len(set(seen))


def test_very_deep_topic_does_not_recurse() -> None:
    """pubsub.md 4 (no limit on levels, seed 003 l.3135-3137): 60,000 levels set, matched by
    '#' and by the literal filter, and deleted, without Python recursion."""
    deep = "/".join(["x"] * 60_000)
    tree: RetainedTree[int] = RetainedTree()
    tree.set(deep, 1)
    assert list(tree.match("#")) == [(deep, 1)]
    assert list(tree.match(deep)) == [(deep, 1)]
    assert tree.delete(deep) is True
    assert tree._root.children == {}
