"""Throughput of the subscription tree and the retained tree (prints figures, asserts nothing).

Why: the design guide asks for a match cache on the publish path (NATS sublist: 1,024 results,
swept to 256, generation invalidation). This shows what the cache buys and what a miss costs
with 10,000 subscriptions of a telemetry-like shape.

    .venv/bin/python bench/bench_topictree.py [--subscriptions N] [--seconds S]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from relaymq.pubsub.retained import RetainedTree
from relaymq.pubsub.topictree import SubscriptionTree


def build_filters(count: int, rng: random.Random) -> list[str]:
    """Mostly literal device topics, some '+' and '#' filters, as a telemetry broker sees."""
    filters = []
    for n in range(count):
        site, device = f"site{n % 50}", f"dev{n}"
        shape = rng.random()
        if shape < 0.70:
            filters.append(f"plant/{site}/{device}/temperature")
        elif shape < 0.85:
            filters.append(f"plant/{site}/+/temperature")
        elif shape < 0.95:
            filters.append(f"plant/{site}/{device}/#")
        else:
            filters.append(f"+/{site}/#")
    return filters


def build_topics(count: int, subscriptions: int, rng: random.Random) -> list[str]:
    topics = []
    for _ in range(count):
        device = rng.randrange(subscriptions)
        topics.append(f"plant/site{device % 50}/dev{device}/temperature")
    return topics


def rate(label: str, seconds: float, operation: Callable[[int], None]) -> None:
    """Run ``operation(i)`` for about ``seconds`` and print operations per second."""
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(1000):
            operation(done)
            done += 1
    elapsed = time.perf_counter() - start
    print(f"  {label:<48} {done / elapsed:>12,.0f} /s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    rng = random.Random(1)
    filters = build_filters(args.subscriptions, rng)

    start = time.perf_counter()
    tree: SubscriptionTree[int] = SubscriptionTree()
    for key, topic_filter in enumerate(filters):
        tree.insert(topic_filter, key, key)
    print(f"{len(tree):,} subscriptions inserted in {time.perf_counter() - start:.3f} s")

    uncached: SubscriptionTree[int] = SubscriptionTree(cache_size=0)
    for key, topic_filter in enumerate(filters):
        uncached.insert(topic_filter, key, key)

    hot = build_topics(200, args.subscriptions, rng)  # fits in the 1,024-entry cache
    cold = build_topics(50_000, args.subscriptions, rng)  # far more topics than the cache holds
    fan = sum(len(tree.match(topic)) for topic in hot) / len(hot)
    print(f"average matches per topic: {fan:.1f}")

    print("SubscriptionTree.match")
    rate("cache hits (200 hot topics)", args.seconds, lambda i: tree.match(hot[i % 200]))
    rate("cache disabled (tree walk every time)", args.seconds, lambda i: uncached.match(cold[i % 50_000]))
    rate("cache enabled, 50,000 distinct topics (sweeps)", args.seconds, lambda i: tree.match(cold[i % 50_000]))

    def churn(i: int) -> None:
        # One subscribe or unsubscribe between publications: every match misses.
        topic_filter = f"churn/{i % 100}/#"
        if i % 2:
            tree.remove(topic_filter, "churn")
        else:
            tree.insert(topic_filter, "churn", i)
        tree.match(hot[i % 200])

    rate("insert-or-remove + match (generation churn)", args.seconds, churn)
    stats = tree.stats()
    print(f"  stats: {stats}")

    retained: RetainedTree[int] = RetainedTree()
    for n, topic in enumerate(build_topics(args.subscriptions, args.subscriptions, rng)):
        retained.set(topic, n)
    print(f"RetainedTree.match over {len(retained):,} retained topics")
    rate("literal filter", args.seconds, lambda i: sum(1 for _ in retained.match(hot[i % 200])))
    rate("'plant/site7/+/temperature'", args.seconds / 2, lambda i: sum(1 for _ in retained.match("plant/site7/+/temperature")))


if __name__ == "__main__":
    main()
