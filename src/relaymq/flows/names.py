"""What a flow or an execution group may be called (letters, digits, '.', '_', '-'; up to 64):
apart from the definitions, so the configuration and the flow manager check a name without
importing the node library (issue 16, a smaller base process)."""

from __future__ import annotations

import re

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
