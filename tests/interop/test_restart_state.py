"""Session state that must survive a real broker restart (issue 2 P2: session expiry, delayed
wills and content filters were lost or reset at restart), through paho MQTT 5 and a broker
process restarted on the same data directory."""

from __future__ import annotations

import time

import pytest

from harness import BrokerProcess

from .clients import PahoClient, paho_client, unique

pytestmark = pytest.mark.interop

FILTER = "relaymq-filter"


def test_session_expiry_runs_on_across_a_restart(broker: BrokerProcess) -> None:
    """MQTT 5 3.1.2.11.2: the session expires its interval after the disconnect, whether or not
    the broker was restarted meanwhile (before the fix a restart restarted the clock)."""
    short = PahoClient(broker, "v5", unique("short"), clean=False, session_expiry=2).connect()
    short.subscribe(unique("exp"), 1)
    long = PahoClient(broker, "v5", unique("long"), clean=False, session_expiry=3600).connect()
    short.disconnect()
    long.disconnect()
    gone_at = time.monotonic()
    broker.stop()
    time.sleep(max(0.0, 2.5 - (time.monotonic() - gone_at)))
    broker.start()
    again = PahoClient(broker, "v5", short.client_id, clean=False, session_expiry=2).connect()
    kept = PahoClient(broker, "v5", long.client_id, clean=False, session_expiry=3600).connect()
    try:
        assert again.session_present is False
        assert kept.session_present is True
    finally:
        again.disconnect()
        kept.disconnect()


def test_delayed_will_is_published_after_a_restart(broker: BrokerProcess) -> None:
    """MQTT 5 3.1.3.2 (Will Delay Interval): a client that dropped shortly before the broker
    stopped has its will published after the restart, once the delay has passed; a persistent
    QoS 1 subscriber of the will topic receives it."""
    will_topic = unique("will")
    watcher = PahoClient(broker, "v311", unique("watch"), clean=False).connect()
    assert watcher.subscribe(will_topic, 1) == [1]
    watcher.disconnect()
    doomed = PahoClient(broker, "v5", unique("doomed"), clean=False, session_expiry=3600,
                        will=(will_topic, b"delayed will", 1, False),
                        will_properties={"WillDelayInterval": 2}).connect()
    doomed.drop()
    time.sleep(0.3)  # the broker sees the connection go
    broker.stop()
    broker.start()
    back = PahoClient(broker, "v311", watcher.client_id, clean=False).connect()
    try:
        [got] = back.inbox.wait_for(1, 15)
        assert (got.topic, got.payload) == (will_topic, b"delayed will")
    finally:
        back.disconnect()


def test_content_filter_survives_kill_9(broker: BrokerProcess) -> None:
    """pubsub.md item 17 (content filters on MQTT subscriptions) with mqtt.md item 26
    (subscriptions outlive the connection, seed 000 l.1227-1229) and README decision 4: a
    persistent MQTT 5 subscription with a relaymq-filter is stored with its filter; after
    SIGKILL and a restart it still receives only what the filter selects."""
    topic = unique("price")
    sub = PahoClient(broker, "v5", unique("filt"), clean=False).connect()
    assert sub.subscribe(f"{topic}/+", 1, user_properties=[(FILTER, "Body.price > 100")]) == [1]
    sub.disconnect()
    broker.kill()
    broker.start()
    pub = paho_client(broker, "v5")
    for name, price in (("IBM", 80), ("HAL", 120), ("IBM", 150)):
        pub.publish(f"{topic}/{name}", f'{{"price": {price}}}'.encode(), 1)
    pub.disconnect()
    back = PahoClient(broker, "v5", sub.client_id, clean=False).connect()
    try:
        back.inbox.wait_for(2)
        received = back.inbox.wait_quiet(1.0)
        assert [(m.topic, m.payload) for m in received] == [
            (f"{topic}/HAL", b'{"price": 120}'), (f"{topic}/IBM", b'{"price": 150}')]
    finally:
        back.disconnect()
