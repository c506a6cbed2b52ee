"""Checks of the conformance runner itself: it must read the data as its README says, or the
per-level verdicts in test_conformance.py mean nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from .runner import (
    REPO_ROOT,
    default_connack,
    default_connect,
    load_cases,
    parse_hex,
)

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def data_dir(conformance_data_dir: Path) -> Path:
    return conformance_data_dir


def test_loads_the_documented_number_of_cases(data_dir: Path) -> None:
    """The loader finds every enabled case at the right level.

    Spec: mqtt-packet-sequences/README.md "1,483 byte-exact MQTT conversations (3 for MQIsdp
    v3.1, 292 for 3.1.1, 1,188 for 5.0)"; "`ver` ... default 4".
    """
    cases = load_cases(data_dir)
    assert Counter(c.level for c in cases) == {3: 3, 4: 292, 5: 1188}
    assert cases[-1].case_id == "BROKER CHECK END OF TEST"  # ZZ-broker-check sorts last


def test_regression_parts_stay_in_order(data_dir: Path) -> None:
    """Cases that depend on the one before them run right after it.

    Spec: mqtt-packet-sequences REGRESSION.json "Must be used with part 2 immediately after".
    """
    ids = [c.case_id for c in load_cases(data_dir)]
    part1 = ids.index("REGRESSIONS subscribe-unsubscribe-crash part 1")
    assert ids[part1 + 1] == "REGRESSIONS subscribe-unsubscribe-crash part 2"


def test_default_connect_bytes() -> None:
    """The default CONNECT: client id = case id, keepalive 60, clean session; MQIsdp at level 3;
    Receive Maximum 20 at level 5.

    Spec: mqtt-packet-sequences/README.md "The default CONNECT"; mqtt.md item 18 (protocol
    name `00 06 4D 51 49 73 64 70`, version 3, seed 000 l.938-949).
    """
    assert default_connect("c", 3) == parse_hex("10 0F 0006 4D5149736470 03 02 003C 0001 63")
    assert default_connect("c", 4) == parse_hex("10 0D 0004 4D515454 04 02 003C 0001 63")
    assert default_connect("c", 5) == parse_hex("10 11 0004 4D515454 05 02 003C 03 2100 14 0001 63")


def test_default_connack_bytes() -> None:
    """Spec: mqtt-packet-sequences/README.md "The default CONNACK is `20 02 00 00` for levels 3
    and 4. For level 5 it is `20 09 00 00 06 22 00 0A 21 00 14`"."""
    assert default_connack(3) == default_connack(4) == bytes([0x20, 2, 0, 0])
    assert default_connack(5).hex() == "200900000622000a210014"


def test_cli_reports_missing_data_with_exit_2(tmp_path: Path) -> None:
    """Missing data is an error that names the paths tried (exit status 2), never a silent pass.

    Spec: mqtt-packet-sequences/README.md "read them from `../shared/conformance/...` or from a
    path given in an environment variable".
    """
    missing = tmp_path / "nowhere"
    env = dict(os.environ, RELAYMQ_CONFORMANCE_DIR=str(missing))
    done = subprocess.run([sys.executable, "-m", "tests.conformance.runner", "--port", "1"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert str(missing) in done.stderr
