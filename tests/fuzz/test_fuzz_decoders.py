"""A brief coverage-guided fuzz run of every front end's decoder (issue 15: "a fuzz test of
every front end's decoder (MQTT, HTTP, channel frames, psc XML, JSON headers) with coverage
guidance ... runs briefly in bin/test and at length from a fuzz/ command"). Each decoder may
raise only its typed protocol error: no other exception, no RecursionError, no input taking
more than a second. fuzz/README.md has the long run and the engine (fuzz/fuzz_engine.py)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))

from fuzz_engine import fuzz  # noqa: E402
from fuzz_targets import TARGETS  # noqa: E402

#: Seconds per decoder in the normal test run.
BRIEF = 2.0


@pytest.mark.parametrize("name", [name for name in TARGETS if name != "channel"])
def test_decoder_raises_only_its_typed_error(name: str, report) -> None:
    logging.disable(logging.CRITICAL)
    try:
        result, _ = fuzz(TARGETS[name], BRIEF, seed=0)
    finally:
        logging.disable(logging.NOTSET)
    report(result.line())
    assert result.arcs > result.seed_arcs or result.executions > 100, result.line()
    assert not result.findings, "\n".join(f"{kind}: {f.error} (input {f.data[:120].hex()})"
                                          for kind, f in result.findings.items())


def test_channel_frame_decoder_raises_only_its_typed_error(report) -> None:
    result, _ = fuzz(TARGETS["channel"], BRIEF, seed=0)
    report(result.line())
    assert not result.findings, "\n".join(f"{kind}: {f.error}" for kind, f in result.findings.items())
