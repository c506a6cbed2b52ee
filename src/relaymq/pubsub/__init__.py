"""Publish/subscribe engine (seed 003): topics, the subscription tree, retained publications.

Topic validation and the reference matcher live in ``topics``; ``topictree.SubscriptionTree``
finds the subscriptions for a published topic (with a match cache); ``retained.RetainedTree``
finds the retained publications for a new subscription's filter. All three follow README
decision 2: one set of matching rules, validated per front end before the engine.
"""

from typing import TYPE_CHECKING

from relaymq.lazy import exports

if TYPE_CHECKING:
    from relaymq.pubsub.retained import RetainedTree
    from relaymq.pubsub.topics import TopicError, parse_shared, topic_matches, validate_topic_filter, validate_topic_name
    from relaymq.pubsub.topictree import SubscriptionTree

__getattr__ = exports(__name__, {
    "retained": ("RetainedTree",),
    "topics": ("TopicError", "parse_shared", "topic_matches", "validate_topic_filter", "validate_topic_name",),
    "topictree": ("SubscriptionTree",),
})

__all__ = [
    "RetainedTree",
    "SubscriptionTree",
    "TopicError",
    "parse_shared",
    "topic_matches",
    "validate_topic_filter",
    "validate_topic_name",
]
