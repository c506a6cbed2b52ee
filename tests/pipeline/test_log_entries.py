"""A publication as the message log stores it (relaymq.pipeline.log_entries): the columns the
writer thread encodes are built directly from the publications, by the one mapping that also
gives the stored row (issue 14, "Message-log append: target >= 200,000 msg/s")."""

from __future__ import annotations

from relaymq.pipeline.log_entries import PUBLICATION_CONSTANTS, Publication, publication_entry, stored_columns
from relaymq.pipeline.record import STORED_COLUMNS
from relaymq.store.base import StoredMessage
from relaymq.store.log_columns import Constant

PROPERTIES = [
    None, {},
    {"user_property": [("unit", "7"), ("mcd.Msd", "json")]},
    {"content_type": "application/xml", "correlation_data": b"c" * 30, "payload_format_indicator": 1,
     "response_topic": "reply/to"},
    {"user_property": [("é", b"\xff"), (1, True)]},
    {"correlation_data": "not bytes"},  # cannot be mapped: kept without its properties
]
STAMPS = [1_700_000_000_000_000 + n for n in range(len(PROPERTIES))]


def _publications() -> list[StoredMessage]:
    return [StoredMessage(n, f"LCUnit/{n}/batch", b"<e>%d</e>" % n, n % 3, properties=properties,
                          expiry_at=1_700_000_060.0 if n % 2 else None)
            for n, properties in enumerate(PROPERTIES)]


def _rows(columns: list[object], count: int) -> list[tuple[object, ...]]:
    lists = [[column.value] * count if isinstance(column, Constant) else column for column in columns]
    return list(zip(*lists, strict=True))


def test_publications_columns_are_their_stored_rows_with_the_mqmd_defaults_given_once(caplog) -> None:
    """Each publication's values in the columns equal its stored row (publication_entry, at its
    stamp); the columns a publication has no value for are one Constant each, not a list."""
    publications = _publications()
    columns = stored_columns(publications, STAMPS, now=1_700_000_000.0)
    assert {name for name, column in zip(STORED_COLUMNS, columns, strict=True)
            if isinstance(column, Constant)} == set(PUBLICATION_CONSTANTS)
    expected = []
    for publication, us in zip(publications, STAMPS, strict=True):
        row = list(publication_entry(publication.topic, publication.payload, publication.qos,
                                     publication.properties, publication.expiry_at, now=1_700_000_000.0))
        row[STORED_COLUMNS.index("timestamp")] = us / 1_000_000
        expected.append(tuple(row))
    assert _rows(columns, len(publications)) == expected
    assert "could not be archived" in caplog.text


def test_entries_already_stored_keep_their_values_among_publications() -> None:
    """A queue put's entry (a tuple in STORED_COLUMNS order) beside publications: restamped,
    its other values kept, and the publications' rows as they are alone."""
    publications = _publications()[:3]
    put = list(publication_entry("queue", b"put", 0, None, now=1.0))
    put[STORED_COLUMNS.index("put_appl_name")] = "an MQ application"
    entries: list[object] = [publications[0], tuple(put), *publications[1:]]
    stamps = STAMPS[:4]
    rows = _rows(stored_columns(entries, stamps, now=1_700_000_000.0), 4)
    alone = _rows(stored_columns(publications, [stamps[0], *stamps[2:]], now=1_700_000_000.0), 3)
    assert [rows[0], *rows[2:]] == alone
    put[STORED_COLUMNS.index("timestamp")] = stamps[1] / 1_000_000
    assert rows[1] == tuple(put)


def test_properties_that_are_not_a_dict_are_archived_without_them(caplog) -> None:
    """The mapping is compiled (relaymq.native_build) and reads the properties with a dict's own
    lookups; a publication handed with another kind of properties keeps its topic, QoS and
    payload in either mode, as a property that cannot be mapped does (issue 14: nothing
    acknowledged is lost). Handed as a Publication: a StoredMessage, compiled, refuses them itself."""
    odd = Publication("LCUnit/1/batch", b"body", 1, [("user_property", [("k", "v")])])  # type: ignore[arg-type]
    expected = list(publication_entry("LCUnit/1/batch", b"body", 1, None))
    expected[STORED_COLUMNS.index("timestamp")] = STAMPS[0] / 1_000_000
    assert _rows(stored_columns([odd], [STAMPS[0]]), 1) == [tuple(expected)]
    assert "not a dict" in caplog.text
