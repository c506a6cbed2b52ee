"""Whether the configured rules (and adapters, relaymq.qmgr.adapters) can be imported, before anything starts: ``serve --check``
and ``serve`` ask (issue 18, "the first hour": ``--check`` said ``config ok`` for a ``[qmgr]
rule`` whose module could not be imported)."""

from __future__ import annotations

from typing import Any

from relaymq.qmgr.errors import BadProperty
from relaymq.qmgr.rules import QueueManagerRule, QueueRule, rule_class


def rule_problems(config: Any) -> list[str]:
    """``key: message`` for each ``[qmgr] rule`` and queue ``rule`` that cannot be imported
    (or is no rule class)."""
    qmgr = config.section("qmgr")
    wanted: list[tuple[str, str, type]] = [("qmgr.rule", qmgr.rule, QueueManagerRule)] if qmgr.rule else []
    wanted += [(f"qmgr.queue[{index}].rule", definition.rule, QueueRule)
               for index, definition in enumerate(qmgr.queue) if definition.rule]
    problems = []
    for key, spec, base in wanted:
        try:
            rule_class(spec, base)
        except BadProperty as error:
            problems.append(f"{key}: {error.message}")
    from relaymq.qmgr.adapters import adapter_problems  # the adapters, too (issue 21)

    return problems + adapter_problems(config)
