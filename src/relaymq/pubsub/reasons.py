"""Reason codes of the ``psc``/``pscr`` command protocol (pubsub.md item 36; seed 003
l.6931-7361).

Why a module of its own: the engine raises them, the response builder writes them, the tests
walk the whole table, and the REST/CLI front ends print their names. The numbers are IBM's
(``cmqc.h``/``cmqcfc.h``/``BipRfc.h``); 3078 is not numbered by the seed (pubsub.md item 36).
"""

from __future__ import annotations

RFH_COMMAND_ERROR = 2336
RFH_PARM_ERROR = 2337
RFH_DUPLICATE_PARM = 2338
RFH_PARM_MISSING = 2339
COMMAND_FAILED = 3008
TOPIC_ERROR = 3072
NOT_REGISTERED = 3073
Q_MGR_NAME_ERROR = 3074
Q_NAME_ERROR = 3076
NO_RETAINED_MSG = 3077
DUPLICATE_IDENTITY = 3078
INCORRECT_Q = 3079
CORREL_ID_ERROR = 3080
NOT_AUTHORIZED = 3081
REG_OPTIONS_ERROR = 3083
PUB_OPTIONS_ERROR = 3084
DEL_OPTIONS_ERROR = 3087
FILTER_ERROR = 3150
WRONG_USER = 3151
DUPLICATE_SUBSCRIPTION = 3152
SUB_NAME_ERROR = 3153
SUB_IDENTITY_ERROR = 3154
SUBSCRIPTION_IN_USE = 3155
SUBSCRIPTION_LOCKED = 3156
ALREADY_JOINED = 3157

#: Code -> IBM constant name without its MQRC_/MQRCCF_ prefix (for logs, the CLI, the docs).
NAMES: dict[int, str] = {
    value: name for name, value in globals().items() if name.isupper() and isinstance(value, int)
}


class PscError(Exception):
    """A command fails (``pscr`` Completion ``error``): nothing of it is processed
    (pubsub.md item 33). ``extra`` holds psc properties naming the cause (``Topic``...)."""

    def __init__(self, reason: int, message: str = "", **extra: str) -> None:
        super().__init__(message or NAMES.get(reason, str(reason)))
        self.reason = reason
        self.extra = extra
