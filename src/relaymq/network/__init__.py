"""Broker networks of seed 003: neighbours, collectives, proxy subscriptions and hierarchies
(spec pubsub.md items 18, 40-42; docs/networks.md)."""
