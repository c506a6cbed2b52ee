"""relaymq: an integration message broker (MQTT MQIsdp v3 / 3.1.1 / 5.0, pub/sub, MQ formats)."""

__version__ = "0.1.0"

# Before any other module of the package: the compiled modules (mypyc) when they match their sources.
import relaymq.native  # noqa: E402,F401

# Then the code of dataclasses' methods kept from an earlier run (start-up time, issue 16 row 9).
from relaymq import dataclass_code  # noqa: E402

dataclass_code.install()
