"""relaymq.flows.releases: the release markers that make a SCADAInput QoS 2 publication reach
its flow exactly once across a crash (issue 14: "exactly once for QoS 2", a flow input among
the places; docs/flows.md "What an acknowledgement means"). A real storage engine on disk."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from relaymq.flows.releases import Releases
from relaymq.store.engine import Engine


def markers(path: Path) -> set[tuple[str, int]]:
    return set(sqlite3.connect(path).execute("SELECT endpoint, msg_id FROM flow_releases"))


def test_a_marker_commits_in_the_unit_of_its_runs_outputs(tmp_path: Path) -> None:
    """The marker is submitted inside the run's unit of work: it commits with the outputs."""
    path = tmp_path / "relaymq.db"
    engine = Engine(str(path))
    try:
        with engine.unit():
            engine.append([("INSERT INTO meta (name, value) VALUES ('output', 1)", ())])
            Releases(engine, "scada-1884").mark(7)
        engine.flush()
    finally:
        engine.close()
    assert markers(path) == {("scada-1884", 7)}


def test_restore_keeps_the_markers_of_waiting_publications_and_drops_stale_ones(tmp_path: Path) -> None:
    """At the endpoint's start: a marker whose publication the endpoint still holds (its
    inbound record) says the run committed; one whose inbound record is gone (a crash between
    the record's delete and the marker's) is deleted, so an id the endpoint hands out again
    after the restart never meets it. Markers of other endpoints are left alone."""
    path = tmp_path / "relaymq.db"
    engine = Engine(str(path))
    try:
        Releases(engine, "scada-1884").mark(5)
        Releases(engine, "scada-1884").mark(6)
        Releases(engine, "scada-1885").mark(5)
        engine.flush()
        releases = Releases(engine, "scada-1884")
        releases.restore({6, 9})
        assert releases.was_run(6)
        assert not releases.was_run(5) and not releases.was_run(9)
        engine.flush()
        assert markers(path) == {("scada-1884", 6), ("scada-1885", 5)}
        releases.forget(6)
        assert not releases.was_run(6)
        engine.flush()
        assert markers(path) == {("scada-1885", 5)}
    finally:
        engine.close()
