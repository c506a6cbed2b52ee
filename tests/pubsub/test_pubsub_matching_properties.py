"""Property tests: the two trees agree with the reference matcher ``topics.topic_matches``.

README decision 2 (one matching engine, one set of rules): for random filters and topics built
from a small alphabet of levels ('', '+', '#', '$x', literals, and literal levels mixing wildcard
characters), SubscriptionTree.match and RetainedTree.match return exactly what a brute-force
``topic_matches`` over every pair says; seed 003 l.3031-3100, 3116-3120, 3147-3157.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.pubsub.retained import RetainedTree
from relaymq.pubsub.topics import topic_matches
from relaymq.pubsub.topictree import SubscriptionTree

LITERALS = ["", "a", "b", "$x", "USA#", "a+"]
FILTER_LEVELS = LITERALS + ["+", "#"]

topics = st.lists(st.sampled_from(LITERALS), min_size=1, max_size=5).map("/".join)
filters = st.lists(st.sampled_from(FILTER_LEVELS), min_size=1, max_size=5).map("/".join)
# Operations on the subscription tree: (insert?, filter, key); keys are small so that the same
# (filter, key) recurs and replacement/removal paths run.
operations = st.lists(st.tuples(st.booleans(), filters, st.integers(0, 2)), max_size=40)


@settings(max_examples=300, deadline=None, database=None)
@given(operations=operations, probes=st.lists(topics, min_size=1, max_size=8), cache_size=st.sampled_from([0, 1, 4, 1024]))
def test_subscription_tree_agrees_with_reference(operations, probes, cache_size) -> None:
    """README decision 2; design.md (match cache invalidated by generation, bounded): after any
    sequence of inserts and removes, with matches in between (so cached results are exercised),
    match(topic) is the set of (key, value) whose filter topic_matches the topic, each once."""
    tree: SubscriptionTree[int] = SubscriptionTree(cache_size=cache_size)
    model: dict[tuple[str, int], int] = {}
    for step, (is_insert, topic_filter, key) in enumerate(operations):
        if is_insert:
            assert tree.insert(topic_filter, key, step) is ((topic_filter, key) not in model)
            model[(topic_filter, key)] = step
        else:
            assert tree.remove(topic_filter, key) == model.pop((topic_filter, key), None)
        assert len(tree) == len(model)
        probe = probes[step % len(probes)]
        _check(tree, model, probe)
        assert tree.stats()["cache_entries"] <= cache_size
    for probe in probes:
        _check(tree, model, probe)
        _check(tree, model, probe)  # the second time from the cache when enabled


def _check(tree: SubscriptionTree[int], model: dict[tuple[str, int], int], topic: str) -> None:
    result = tree.match(topic)
    expected = sorted((key, value) for (f, key), value in model.items() if topic_matches(f, topic))
    assert sorted(result) == expected, (topic, result, expected)


@settings(max_examples=300, deadline=None, database=None)
@given(stored=st.lists(topics, max_size=25), deleted=st.lists(topics, max_size=10), probes=st.lists(filters, min_size=1, max_size=8))
def test_retained_tree_agrees_with_reference(stored, deleted, probes) -> None:
    """README decision 2; pubsub.md 23-24 (a subscription receives the retained publications
    its filter matches): match(filter) yields each stored topic that topic_matches, once."""
    tree: RetainedTree[str] = RetainedTree()
    model: dict[str, str] = {}
    for topic in stored:
        tree.set(topic, "v:" + topic)
        model[topic] = "v:" + topic
    for topic in deleted:
        assert tree.delete(topic) is (model.pop(topic, None) is not None)
    assert len(tree) == len(model)
    for topic_filter in probes:
        result = list(tree.match(topic_filter))
        assert len(result) == len({topic for topic, _ in result})
        expected = sorted((t, v) for t, v in model.items() if topic_matches(topic_filter, t))
        assert sorted(result) == expected, (topic_filter, result, expected)
    for topic in list(model):
        assert tree.get(topic) == model[topic]
        tree.delete(topic)
    assert tree._root.children == {}


@settings(max_examples=200, deadline=None, database=None)
@given(subscribed=st.lists(filters, max_size=20), probes=st.lists(topics, min_size=1, max_size=5))
def test_subscription_tree_prunes_to_empty(subscribed, probes) -> None:
    """design.md ('Bounded everything', no growth with churn): inserting then removing any set
    of filters leaves an empty root and matches nothing."""
    tree: SubscriptionTree[int] = SubscriptionTree()
    for key, topic_filter in enumerate(subscribed):
        tree.insert(topic_filter, key, key)
    for probe in probes:
        tree.match(probe)
    for key, topic_filter in enumerate(subscribed):
        assert tree.remove(topic_filter, key) == key
    root = tree._root
    assert (root.literal, root.plus, root.hash, root.entries) == ({}, None, None, {})
    for probe in probes:
        assert tree.match(probe) == ()
