"""Publish/subscribe engine (seed 003): topics, the subscription tree, retained publications.

Topic validation and the reference matcher live in ``topics``; ``topictree.SubscriptionTree``
finds the subscriptions for a published topic (with a match cache); ``retained.RetainedTree``
finds the retained publications for a new subscription's filter. All three follow README
decision 2: one set of matching rules, validated per front end before the engine.
"""

from .retained import RetainedTree
from .topics import TopicError, parse_shared, topic_matches, validate_topic_filter, validate_topic_name
from .topictree import SubscriptionTree

__all__ = [
    "RetainedTree",
    "SubscriptionTree",
    "TopicError",
    "parse_shared",
    "topic_matches",
    "validate_topic_filter",
    "validate_topic_name",
]
