"""The subscription tree and its match cache (relaymq.pubsub.topictree).

Line numbers are in /work/shared/seeds/003_a8ffa67dc270420a.txt; "README" and "pubsub.md" are
in /work/shared/spec/, "design.md" is /work/shared/guide/design.md.
"""

from __future__ import annotations

import pytest

from relaymq.pubsub.topictree import SubscriptionTree


def keys(result) -> set:
    return {key for key, _ in result}


def make(*filters: str) -> SubscriptionTree[str]:
    tree: SubscriptionTree[str] = SubscriptionTree()
    for topic_filter in filters:
        tree.insert(topic_filter, topic_filter, "v:" + topic_filter)
    return tree


# -- matching rules ---------------------------------------------------------------------------


def test_item_7_8_and_11_seed_examples_for_both_wildcards() -> None:
    """pubsub.md 7, 8, 11; seed 003 l.3031-3043 ('USA/Alaska/#', 'USA/#' matches 'USA'),
    l.3056-3062 ('USA/+'), l.2680-2684 ('+/Alabama/#', '#')."""
    tree = make("USA/Alaska/#", "USA/#", "USA/+", "+/Alabama/#", "#", "USA/Alaska")
    assert keys(tree.match("USA/Alaska")) == {"USA/Alaska/#", "USA/#", "USA/+", "#", "USA/Alaska"}
    assert keys(tree.match("USA/Alaska/Juneau")) == {"USA/Alaska/#", "USA/#", "#"}
    assert keys(tree.match("USA")) == {"USA/#", "#"}
    assert keys(tree.match("USA/Alabama/Auburn")) == {"USA/#", "+/Alabama/#", "#"}
    assert keys(tree.match("Canada")) == {"#"}


def test_item_9_wildcards_are_wild_only_as_a_whole_level() -> None:
    """README decision 2; pubsub.md 9; seed 003 l.3045-3100: 'USA#', 'USA+', '#+', 'level#'
    are literal levels."""
    tree = make("USA#", "USA+", "level0/level1/#+/level4/level#")
    assert keys(tree.match("USA#")) == {"USA#"}
    assert keys(tree.match("USA+")) == {"USA+"}
    assert tree.match("USA") == ()
    assert tree.match("USA/x") == ()
    assert tree.match("USAx") == ()
    assert keys(tree.match("level0/level1/#+/level4/level#")) == {"level0/level1/#+/level4/level#"}
    assert tree.match("level0/level1/x/level4/level") == ()


def test_a_topic_level_spelled_like_a_wildcard_does_not_duplicate_results() -> None:
    """README decision 2: a filter's '+' is matched by wildcard, never by literal lookup, so a
    (psc-invalid but unvalidated) topic level '+' finds a '+' subscription exactly once."""
    tree = make("a/+")
    assert tree.match("a/+") == (("a/+", "v:a/+"),)


def test_dollar_topics_skip_first_level_wildcards() -> None:
    """README decision 2; pubsub.md 6; seed 003 l.3147-3157 ($SYS, $ISYS reserved)."""
    tree = make("#", "+/Broker", "+/#", "#/Broker", "$SYS/#", "$SYS/+", "a/#")
    assert keys(tree.match("$SYS/Broker")) == {"$SYS/#", "$SYS/+"}
    assert keys(tree.match("$SYS")) == {"$SYS/#"}
    assert keys(tree.match("x/Broker")) == {"#", "+/Broker", "+/#", "#/Broker"}
    assert keys(tree.match("a/$SYS")) == {"#", "+/#", "a/#"}


def test_multilevel_wildcard_matches_its_parent_level() -> None:
    """pubsub.md 7; seed 003 l.3039-3041: 'USA/#' also matches 'USA' (zero levels)."""
    tree = make("a/#", "a/b/#")
    assert keys(tree.match("a")) == {"a/#"}
    assert keys(tree.match("a/b")) == {"a/#", "a/b/#"}
    assert tree.match("b") == ()


def test_empty_levels_are_real_levels() -> None:
    """README decision 2; pubsub.md 3; seed 003 l.3116-3120: '/USA' matches '+/+' and '/+',
    not '+'; 'a//b' has an empty middle level (MQTT 3.1.1 4.7.1)."""
    tree = make("+", "+/+", "/+", "USA", "a/+/b", "a//b", "a/b", "a/+")
    assert keys(tree.match("/USA")) == {"+/+", "/+"}
    assert keys(tree.match("USA")) == {"+", "USA"}
    assert keys(tree.match("a//b")) == {"a/+/b", "a//b"}
    assert keys(tree.match("a/")) == {"a/+", "+/+"}
    assert keys(tree.match("/")) == {"+/+", "/+"}


def test_multilevel_wildcard_in_the_middle() -> None:
    """pubsub.md decisions: '#' may stand at any level of a psc subscription and matches zero
    or more levels there; each subscription is returned once however many ways it matches."""
    tree = make("a/#/c", "a/#/#", "#/#", "a/#/+")
    assert sorted(keys(tree.match("a/c"))) == ["#/#", "a/#/#", "a/#/+", "a/#/c"]
    result = tree.match("a/b/c/c")
    assert len(result) == len(set(result)) == 4
    assert keys(tree.match("a")) == {"a/#/#", "#/#"}
    assert keys(tree.match("$x/a/c")) == set()


def test_case_sensitive() -> None:
    """README decision 5; pubsub.md 2; seed 003 l.3108-3110."""
    tree = make("ACCOUNTS")
    assert tree.match("Accounts") == ()
    assert keys(tree.match("ACCOUNTS")) == {"ACCOUNTS"}


# -- entries ------------------------------------------------------------------------------------


def test_one_entry_per_filter_and_key() -> None:
    """pubsub.md 13-14 (a subscription is topic + subscriber; one subscriber may hold several):
    each (filter, key) is one entry, returned with its own value; merging copies for a
    subscriber (seed 003 l.2738-2740) is the caller's job."""
    tree: SubscriptionTree[int] = SubscriptionTree()
    assert tree.insert("a/+", "client1", 1) is True
    assert tree.insert("a/#", "client1", 2) is True
    assert tree.insert("a/+", "client2", 3) is True
    assert len(tree) == 3
    assert sorted(tree.match("a/b")) == [("client1", 1), ("client1", 2), ("client2", 3)]


def test_insert_same_filter_and_key_replaces_the_value() -> None:
    """pubsub.md 29 (a repeated registration alters the existing subscription); MQTT 3.1.1
    [MQTT-3.8.4-3] (a SUBSCRIBE for an existing filter replaces it)."""
    tree: SubscriptionTree[int] = SubscriptionTree()
    assert tree.insert("a/b", "c", 1) is True
    assert tree.match("a/b") == (("c", 1),)
    assert tree.insert("a/b", "c", 2) is False
    assert len(tree) == 1
    assert tree.match("a/b") == (("c", 2),)


def test_remove_returns_the_value_or_none() -> None:
    """pubsub.md 19 (subscriptions persist until removed); 30 (DeregSub names the registered
    filter string exactly, so 'a/+' does not remove 'a/b')."""
    tree: SubscriptionTree[int] = SubscriptionTree()
    tree.insert("a/b", "c", 1)
    tree.insert("a/+", "c", 2)
    assert tree.remove("a/x", "c") is None
    assert tree.remove("a/b", "other") is None
    assert tree.remove("a/b/c", "c") is None
    assert tree.remove("a/+", "c") == 2
    assert tree.remove("a/+", "c") is None
    assert len(tree) == 1
    assert tree.match("a/b") == (("c", 1),)
    assert tree.match("a/z") == ()


def test_remove_prunes_empty_nodes() -> None:
    """design.md 'Bounded everything' (memory must not grow with churn): after removing every
    entry, no node is left below the root."""
    tree: SubscriptionTree[int] = SubscriptionTree()
    filters = ["a/b/c", "a/+/c", "a/#", "#", "+", "/x//y", "a/#/c", "$SYS/#"]
    for round_number in range(3):
        for index, topic_filter in enumerate(filters):
            tree.insert(topic_filter, index, round_number)
        for index, topic_filter in enumerate(filters):
            assert tree.remove(topic_filter, index) == round_number
    root = tree._root
    assert root.literal == {} and root.plus is None and root.hash is None and root.entries == {}
    assert len(tree) == 0


def test_remove_keeps_nodes_still_in_use() -> None:
    """design.md (pruning must not lose other subscriptions): removing 'a/b' keeps 'a/b/c' and
    'a'."""
    tree = make("a", "a/b", "a/b/c")
    tree.remove("a/b", "a/b")
    assert keys(tree.match("a/b/c")) == {"a/b/c"}
    assert keys(tree.match("a")) == {"a"}
    assert tree.match("a/b") == ()


def test_very_deep_topics_do_not_recurse() -> None:
    """pubsub.md 4 (no limit on the number of levels, seed 003 l.3135-3137): a topic of 60,000
    levels is inserted, matched and removed without hitting Python's recursion limit."""
    deep = "/".join(["x"] * 60_000)
    tree = make(deep, "#", deep + "/#")
    assert keys(tree.match(deep)) == {deep, "#", deep + "/#"}
    assert tree.remove(deep, deep) == "v:" + deep
    assert tree.remove(deep + "/#", deep + "/#") == "v:" + deep + "/#"
    assert tree._root.literal == {}


# -- the match cache -----------------------------------------------------------------------------


def test_repeated_match_is_a_cache_hit_returning_an_immutable_result() -> None:
    """design.md ('A match cache'; NATS sublist: result cache, hit and miss counters)."""
    tree = make("a/+")
    first = tree.match("a/b")
    assert tree.stats()["misses"] == 1 and tree.stats()["hits"] == 0
    second = tree.match("a/b")
    assert second == first
    assert tree.stats()["hits"] == 1 and tree.stats()["misses"] == 1
    assert isinstance(second, tuple)
    assert tree.stats()["cache_entries"] == 1


def test_insert_after_a_cached_match_is_seen_by_the_next_match() -> None:
    """design.md (cache invalidated by a generation counter bumped on every subscribe)."""
    tree = make("a/+")
    assert keys(tree.match("a/b")) == {"a/+"}
    generation = tree.stats()["generation"]
    tree.insert("a/#", "a/#", "v")
    assert tree.stats()["generation"] > generation
    assert keys(tree.match("a/b")) == {"a/+", "a/#"}


def test_remove_and_replace_after_a_cached_match_are_seen_by_the_next_match() -> None:
    """design.md (cache invalidated by a generation counter bumped on every unsubscribe, and
    by a value replacement, which must not serve the old value)."""
    tree: SubscriptionTree[int] = SubscriptionTree()
    tree.insert("a/+", "k", 1)
    tree.insert("a/b", "k", 2)
    assert sorted(tree.match("a/b")) == [("k", 1), ("k", 2)]
    tree.remove("a/b", "k")
    assert tree.match("a/b") == (("k", 1),)
    tree.insert("a/+", "k", 3)
    assert tree.match("a/b") == (("k", 3),)


def test_failed_remove_does_not_invalidate_the_cache() -> None:
    """design.md (the generation changes on an actual subscribe/unsubscribe only)."""
    tree = make("a/+")
    tree.match("a/b")
    generation = tree.stats()["generation"]
    assert tree.remove("x/y", "nobody") is None
    assert tree.stats()["generation"] == generation
    tree.match("a/b")
    assert tree.stats()["hits"] == 1


@pytest.mark.parametrize("cache_size", [1, 4, 10, 1024])
def test_cache_never_holds_more_than_cache_size_and_sweeps_to_a_quarter(cache_size: int) -> None:
    """design.md (NATS sublist: bounded cache of 1,024 results swept down to 256)."""
    tree: SubscriptionTree[int] = SubscriptionTree(cache_size=cache_size)
    tree.insert("#", "k", 0)
    sizes = []
    for n in range(3 * cache_size + 5):
        tree.match(f"t/{n}")
        sizes.append(tree.stats()["cache_entries"])
        assert sizes[-1] <= cache_size
    assert max(sizes) == cache_size
    # The insertion after a full cache leaves the kept quarter plus the new result.
    assert sizes[cache_size] == cache_size // 4 + 1
    # The newest results are the ones kept.
    hits = tree.stats()["hits"]
    tree.match(f"t/{3 * cache_size + 4}")
    assert tree.stats()["hits"] == hits + 1


def test_cache_size_zero_disables_the_cache() -> None:
    """design.md (the cache is an optimisation: results are the same without it)."""
    tree: SubscriptionTree[int] = SubscriptionTree(cache_size=0)
    tree.insert("a/#", "k", 1)
    assert tree.match("a/b") == (("k", 1),)
    assert tree.match("a/b") == (("k", 1),)
    assert tree.stats() == {"hits": 0, "misses": 2, "generation": 1, "cache_entries": 0}


def test_negative_cache_size_is_refused() -> None:
    """design.md ('Bounded everything': a limit must be meaningful)."""
    with pytest.raises(ValueError):
        SubscriptionTree(cache_size=-1)


def test_stats_reports_no_stale_entries_after_a_change() -> None:
    """design.md (generation invalidation): results of an older generation are not counted."""
    tree = make("a/+")
    tree.match("a/b")
    tree.match("a/c")
    assert tree.stats()["cache_entries"] == 2
    tree.insert("b", "b", "v")
    assert tree.stats()["cache_entries"] == 0
    tree.match("a/b")
    assert tree.stats()["cache_entries"] == 1


def test_observers_see_every_insert_and_successful_remove() -> None:
    """The change hook the pub/sub service's subscription events (pubsub.md item 45) rely on:
    one call per insert (a replacement too) and per remove that removed something."""
    tree: SubscriptionTree[str] = SubscriptionTree()
    seen: list[tuple] = []
    tree.observers.append(lambda added, topic_filter, key, value: seen.append((added, topic_filter, key, value)))
    tree.insert("a/#", "c1", "v1")
    tree.insert("a/#", "c1", "v2")
    assert tree.remove("a/+", "c1") is None
    assert tree.remove("a/#", "c1") == "v2"
    assert seen == [(True, "a/#", "c1", "v1"), (True, "a/#", "c1", "v2"), (False, "a/#", "c1", "v2")]
