"""The catalog's control rows are typed records (compozy.store.records): what a row holds comes back
as the record that wrote it, JSON columns and all, through the real SQLite catalog; and the one
receipts helper (compozy.session.records.receipts) answers a repeated request or refuses another."""

import pytest

from compozy.errors import CompozyError
from compozy.session.records.receipts import recorded, replayed
from compozy.store.catalog import Catalog
from compozy.store.records import Admission, Derivation, Interaction, QueueEntry, RewindReceipt


@pytest.fixture
def catalog(tmp_path):
    opened = Catalog(tmp_path / "compozy.db")
    yield opened
    opened.close()


def test_each_control_row_reads_back_as_the_record_that_wrote_it(catalog):
    admission = Admission(id="idem_1", session_id="s1", operation="prompt", idempotency_key="k1",
                          fingerprint="sha256:a", state="queued", message_id="m1", result={"turn_id": "t1"})
    catalog.add_admission(admission)
    entry = catalog.add_entry(QueueEntry(id="queue_1", session_id="s1", status="queued", mode="queue",
                                         message="hi", message_id="m1", idempotency_key="k1", turn_id="t1",
                                         runtime={"model": "m"}, admission_id="idem_1"))
    catalog.add_interaction(Interaction(id="perm_1", session_id="s1", kind="edit", status="pending",
                                        turn_id="t1", payload={"action": "edit"}))
    catalog.derived.add_rewind(RewindReceipt("s1", "r1", "sha256:r", "pending", {"generation": 1}))
    catalog.derived.add_derivation(Derivation("ws1", "c1", "sha256:c", "fork", "s1", "s2", "creating"))

    stored = catalog.admission("s1", "k1")
    assert (stored.result, stored.state, stored.created_at is not None) == ({"turn_id": "t1"}, "queued", True)
    assert catalog.admission_by_message("s1", "m1") == stored
    assert (entry.runtime, entry.position, entry.failure) == ({"model": "m"}, 1, None)
    assert catalog.entries("s1") == [entry]
    assert [(i.id, i.payload, i.decision) for i in catalog.interactions("s1")] == [("perm_1", {"action": "edit"}, None)]
    assert catalog.derived.rewind("s1", "r1").result == {"generation": 1}
    assert catalog.derived.derivation("ws1", "c1").result is None
    assert [d.child_session_id for d in catalog.derived.derivations_in_state("creating")] == ["s2"]


def test_a_row_round_trips_through_its_columns():
    entry = QueueEntry(id="queue_1", session_id="s1", status="failed", mode="queue", message="hi", message_id="m1",
                       idempotency_key="k1", turn_id="t1", failure={"code": "x", "message": "y"})
    row = entry.to_row()
    assert row["failure"] == '{"code": "x", "message": "y"}'
    assert QueueEntry.from_row(row) == entry


def test_a_receipt_replays_its_own_request_and_refuses_another():
    receipt = RewindReceipt("s1", "r1", "sha256:r", "completed", {"generation": 1})
    assert recorded(None, "sha256:r", "conflict") is None
    assert replayed(recorded(receipt, "sha256:r", "conflict")) == {"generation": 1, "replayed": True}
    with pytest.raises(CompozyError) as refused:
        recorded(receipt, "sha256:other", "this key rewound to another message", idempotency_key="r1")
    assert (refused.value.code, refused.value.details) == ("idempotency_conflict", {"idempotency_key": "r1"})
    with pytest.raises(CompozyError, match="did not complete"):
        replayed(RewindReceipt("s1", "r1", "sha256:r", "pending"))
