"""``python -m relaymq``: the same entry point as the ``relaymq`` console script.

Why: tests and machines without the script on PATH (a bare checkout, a container) can still
run every command with the interpreter they already have.
"""

import sys

from relaymq.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
