"""``python fuzz/run.py [TARGET ...] [--seconds N] [--seed S]``: the long fuzz run.

Fuzzes each target (default: all of fuzz/fuzz_targets.py) for N seconds, prints one line per target
(executions, arcs covered, corpus, findings) and, for each finding, the shrunk input (hex) and
the error; exit status 1 when anything was found. See fuzz/README.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

from fuzz_engine import fuzz  # noqa: E402
from fuzz_targets import TARGETS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", choices=[[], *TARGETS], metavar="TARGET",
                        help=f"any of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--seconds", type=float, default=300.0, help="per target (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the decoders' own log lines are expected noise here
    found = False
    for name in args.targets or list(TARGETS):
        result, _ = fuzz(TARGETS[name], args.seconds, seed=args.seed)
        print(result.line(), flush=True)
        for kind, finding in result.findings.items():
            found = True
            print(f"  {kind}: {finding.error}\n    input ({len(finding.data)} bytes): {finding.data[:200].hex()}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
