"""What ``[network]`` needs of the other sections, checked before anything starts (``serve``
and ``serve --check``): an assured link (a neighbour with ``qmgr``, ``assured.py``) needs a
``[[qmgr.connection]]`` that leads to that queue manager, and it must be another one than
this broker's own."""

from __future__ import annotations

from typing import Any

from relaymq.qmgr.channel_settings import route_of


def network_problems(config: Any) -> list[str]:
    """``key: message`` for each neighbour whose ``qmgr`` cannot be reached."""
    network = config.section("network")
    qmgr = config.section("qmgr")
    problems = []
    for index, neighbor in enumerate(network.neighbor):
        if not neighbor.qmgr:
            continue
        key = f"network.neighbor[{index}].qmgr"
        if neighbor.qmgr == qmgr.name:
            problems.append(f"{key}: {neighbor.qmgr!r} is this broker's own queue manager (qmgr.name)")
        elif route_of(neighbor.qmgr, qmgr.connection) is None:
            problems.append(f"{key}: no [[qmgr.connection]] leads to {neighbor.qmgr!r}: persistent publications"
                            f" to {neighbor.name} travel over that channel (define it with name = {neighbor.qmgr!r}"
                            " and the address of its channel listener)")
    return problems
