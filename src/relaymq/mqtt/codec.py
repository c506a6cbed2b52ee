"""The MQTT codec's public face: bytes <-> packets for protocol levels 3, 4 and 5.

The work is split by direction (``decoder.py``, ``encoder.py``) over the primitive wire
types (``wire.py``); this module gathers the names the broker uses, so callers need one import.
"""

from __future__ import annotations

from relaymq.mqtt.decoder import CLIENT_ONLY, SERVER_ONLY, decode
from relaymq.mqtt.encoder import encode, encode_ack, encode_publish, patch_publish
from relaymq.mqtt.wire import decode_remaining_length, encode_remaining_length

__all__ = [
    "CLIENT_ONLY", "SERVER_ONLY", "decode", "decode_remaining_length", "encode", "encode_ack",
    "encode_publish", "encode_remaining_length", "patch_publish",
]
