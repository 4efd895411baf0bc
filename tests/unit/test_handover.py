"""compozy.store.handover: an adoption reads a session's control rows from its old node's catalog, even one an
older compozy wrote, lacking tables added since."""

import sqlite3

from compozy.store.handover import CARRIED, read_session_rows


def test_an_older_catalog_without_some_tables_carries_what_it_has(tmp_path):
    catalog = tmp_path / "compozy.db"
    with sqlite3.connect(catalog) as db:  # an older node's catalog: no rewind_receipts, no derivations yet
        db.execute("CREATE TABLE admissions (session_id TEXT, key TEXT)")
        db.execute("CREATE TABLE input_queue (session_id TEXT, message TEXT)")
        db.execute("CREATE TABLE pending_interactions (session_id TEXT, id TEXT)")
        db.execute("INSERT INTO input_queue VALUES ('sess_a', 'run me later'), ('sess_b', 'not this one')")
    rows = read_session_rows(catalog, "sess_a")
    assert set(rows) == set(CARRIED)
    assert rows["input_queue"] == [{"session_id": "sess_a", "message": "run me later"}]
    assert rows["rewind_receipts"] == rows["derivations"] == rows["admissions"] == []
