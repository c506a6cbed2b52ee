"""The message log's record batches kept column by column (relaymq.store.log_columns, format 2
of relaymq.store.log_batch): every stored value reads back as the exact object it was, and the
log's columns are kept in the layouts the Spark reader wraps without a step per value
(issue 16: log -> Spark -> Parquet >= 200,000 msg/s; the Python workers unpacked every stored
value of every entry)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from relaymq.pipeline.log_entries import publication_entry
from relaymq.pipeline.record import STORED_COLUMNS
from relaymq.store import log_batch, log_columns


class Text(str):
    """A str subclass: marshal does not write it; it is kept as its str."""


SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True), st.text(), st.text(alphabet="ab"), st.binary(max_size=16),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
)


def _same(got: object, want: object) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, float):
        return type(got) is float and math.copysign(1, got) == math.copysign(1, want) and got == want  # type: ignore[arg-type]
    return type(got) is type(want) and got == want


@settings(max_examples=300)
@given(st.integers(1, 6).flatmap(lambda count: st.lists(
    st.one_of(st.lists(SCALARS, min_size=count, max_size=count),               # values of any types
              SCALARS.map(lambda value: [value] * count),                       # one value in every entry
              st.lists(st.integers(-5, 5), min_size=count, max_size=count),     # one type each
              st.lists(st.text(), min_size=count, max_size=count),
              st.lists(st.binary(), min_size=count, max_size=count),
              st.lists(st.floats(), min_size=count, max_size=count)),
    min_size=1, max_size=5)))
def test_columns_read_back_as_the_exact_values(columns: list[list[object]]) -> None:
    """log_batch.py: "every value reads back as the exact object it was, as format 1 gives it"
    (type included: True is not 1, -0.0 is not 0.0, an int beyond 64 bits stays whole)."""
    count = len(columns[0])
    rows = log_batch.decode(log_batch.encode(columns, count))
    assert len(rows) == count
    for index, column in enumerate(columns):
        assert all(_same(row[index], value) for row, value in zip(rows, column, strict=True)), (index, column)
        assert all(_same(value, want) for value, want in zip(log_batch.layout(log_batch.encode(columns, count))
                                                             .values(index), column, strict=True))


def test_values_marshal_does_not_write_are_kept_as_their_built_in_type() -> None:
    """A str subclass, a lone surrogate, None among strings: kept, as format 1 kept them."""
    rows = log_batch.decode(log_batch.encode([[Text("a"), Text("b")], ["\ud800", "x"], [None, "y"]], 2))
    assert rows == [("a", "\ud800", None), ("b", "x", "y")] and type(rows[0][0]) is str


def test_publication_columns_are_kept_in_arrow_layouts() -> None:
    """The columns of archived publications: the timestamp as float64s, topics and bodies as
    Arrow's offsets and bytes, usr as an Arrow map, and a value shared by every entry (the
    MQMD defaults, one QoS) once; no column is left as Python values to convert."""
    entries = [publication_entry(f"LCUnit/{i}/batch", b"<e>%d</e>" % i, 1,
                                 {"user_property": [("unit", str(i)), ("é", "ü")]}) for i in range(50)]
    columns = [list(column) for column in zip(*entries, strict=True)]
    columns[STORED_COLUMNS.index("timestamp")] = [1_700_000_000 + i / 1_000_000 for i in range(50)]
    layout = log_columns.Layout(log_batch.encode(columns, 50))
    kinds = {name: layout.columns[index][0] for index, name in enumerate(STORED_COLUMNS)}
    assert (kinds["timestamp"], kinds["topic"], kinds["body"], kinds["usr"]) == ("d", "s", "b", "M")
    assert {kinds[name] for name in ("queue", "qos", "msg_type", "ccsid", "encoding", "put_appl_name", "domain")} == {"c"}
    assert "m" not in kinds.values()
    assert layout.values(STORED_COLUMNS.index("usr"))[7] == {"unit": "7", "é": "ü"}


def test_a_batch_written_row_by_row_still_reads() -> None:
    """Format 1 (a marshal list of rows: what relaymq wrote before columns) reads as before,
    by rows and by columns."""
    import marshal

    rows = [("t/1", None, 1.5, {"k": "v"}, b"x"), (None, "Q", 2.5, {}, b"")]
    data = log_batch.FORMAT_ROWS + marshal.dumps(rows, 4)
    assert log_batch.decode(data) == rows
    assert log_batch.layout(data).values(3) == [{"k": "v"}, {}]


def test_a_column_given_as_its_one_value_is_kept_as_the_repeated_value_is() -> None:
    """issue 14 ("Message-log append"): a writer that knows a column holds one value in every
    entry (the MQMD defaults of a publication) gives it once (log_columns.Constant), and the
    batch is the very bytes of the column given entry by entry; a value that is not kept as
    a constant (a float) is kept as its repeated column is."""
    given = [log_columns.Constant(None), log_columns.Constant("relaymq mqtt"), log_columns.Constant(1.5),
             log_columns.Constant(True), ["a", "b", "c"]]
    repeated = [[None] * 3, ["relaymq mqtt"] * 3, [1.5] * 3, [True] * 3, ["a", "b", "c"]]
    data = log_batch.encode(given, 3)
    assert data == log_batch.encode(repeated, 3)
    assert [kind[0] for kind in log_columns.Layout(data).columns] == ["c", "c", "d", "c", "s"]
    assert log_batch.decode(data) == list(zip(*repeated, strict=True))
