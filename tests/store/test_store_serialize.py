"""MQTT 5 property values survive the JSON encoding with their exact types."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.store.serialize import decode_properties, encode_properties

VALUES = st.one_of(
    st.text(),
    st.integers(-(2**63), 2**63),
    st.binary(max_size=64),
    st.lists(st.integers(0, 268_435_455), max_size=4),
    st.lists(st.tuples(st.text(max_size=8), st.text(max_size=8)), max_size=4),
)


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=12), VALUES, max_size=6))
def test_properties_round_trip_with_types(props: dict[str, object]) -> None:
    """str, int, bytes, lists of ints and lists of (str, str) pairs come back equal and of the
    same type (tuples stay tuples, bytes stay bytes), for any keys including ones that look like
    the encoding's tags (task brief: properties serialised safely, never pickled)."""
    decoded = decode_properties(encode_properties(props))
    assert decoded == props
    assert [type(v) for v in decoded.values()] == [type(v) for v in props.values()]
    for key, value in props.items():
        if isinstance(value, list) and value and isinstance(value[0], tuple):
            assert all(type(pair) is tuple for pair in decoded[key])


def test_tag_like_keys_and_empty_properties() -> None:
    """Keys named like the tags do not confuse decoding; no properties store nothing (task
    brief: properties serialised safely)."""
    props = {"b": b"\x00", "t": [("b", "t")], "d": "plain"}
    assert decode_properties(encode_properties(props)) == props
    assert encode_properties({}) is None and decode_properties(None) == {}


def test_objects_that_would_need_pickle_are_refused() -> None:
    """Anything outside the supported types raises TypeError rather than being stored unsafely
    (task brief: never pickle)."""
    with pytest.raises(TypeError, match="object"):
        encode_properties({"x": object()})
    with pytest.raises(TypeError, match="property names"):
        encode_properties({1: "x"})  # type: ignore[dict-item]
