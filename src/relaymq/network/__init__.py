"""Broker networks of seed 003: neighbours, collectives, proxy subscriptions, clones and
hierarchies (spec pubsub.md items 18, 40-43; docs/networks.md)."""
