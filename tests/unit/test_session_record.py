"""SessionRecord and RuntimeRecord serialise to exactly the JSON the untyped documents did.

The fixtures are meta.json files, catalog rows and their rendered reads written by the daemon
before the records were typed (created, after a turn, with a selection, stopped, archived, a child, a
never-bound stop), kept byte for byte.
"""

import json
from pathlib import Path

import pytest

from compozy import serialize
from compozy.session.records.record import ABSENT, RuntimeRecord, SessionRecord
from compozy.store.meta import SCHEMA, write_meta

FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "session_records.json").read_text())


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_meta_json_is_written_byte_for_byte_as_before(name, tmp_path):
    stored = json.loads(FIXTURES[name]["meta"])
    assert stored.pop("schema") == SCHEMA
    write_meta(tmp_path / "meta.json", SessionRecord.from_dict(stored).to_dict())
    assert (tmp_path / "meta.json").read_text() == FIXTURES[name]["meta"]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_the_catalog_row_and_its_rendered_read_are_the_same_text(name):
    record = SessionRecord.from_dict(json.loads(FIXTURES[name]["doc"]))
    assert json.dumps(record.to_dict(), separators=(",", ":")) == FIXTURES[name]["doc"]
    resource = serialize.session_resource(record, None, record.fences.get("max_sequence", 0))
    assert json.dumps(resource, separators=(",", ":")) == FIXTURES[name]["resource"]


def test_keys_this_version_does_not_know_are_kept():
    stored = json.loads(FIXTURES["created"]["meta"])
    stored["derivation"] = {"kind": "fork"}
    stored["runtime"]["future"] = 1
    again = SessionRecord.from_dict(stored).to_dict()
    assert again["derivation"] == {"kind": "fork"} and again["runtime"]["future"] == 1


def test_keys_written_once_they_have_a_value_stay_absent_until_then():
    record = SessionRecord.from_dict(json.loads(FIXTURES["created"]["meta"]))
    assert record.activity is ABSENT and record.stopped_at is ABSENT and record.runtime.route is ABSENT
    document = record.to_dict()
    assert "activity" not in document and "stopped_at" not in document and "route" not in document["runtime"]
    record.change(stopped_at="2026-01-01T00:00:00.000000Z", runtime=record.runtime.replace(route=None))
    document = record.to_dict()
    assert document["stopped_at"] and document["runtime"]["route"] is None  # the only route: null, present


def test_a_field_a_record_does_not_have_is_refused():
    record = SessionRecord.from_dict(json.loads(FIXTURES["created"]["meta"]))
    with pytest.raises(AttributeError):
        record.change(stat="stopped")


def test_the_runtime_record_round_trips():
    runtime = RuntimeRecord(status="ready", acp_session_id="ref_1", process={"pid": 1}, route=2)
    assert RuntimeRecord.from_dict(runtime.to_dict()) == runtime


def _record(**changes):
    record = SessionRecord.from_dict(json.loads(FIXTURES["after_turn"]["meta"]))
    record.change(**changes)
    return record


@pytest.mark.parametrize("changes, bound, prompting, expected", [
    ({}, None, False, {"state": "idle", "health": "healthy", "attachable": False, "eligible_for_wake": True}),
    ({"state": "stopped"}, True, False, {"state": "stopped", "health": "unknown",
                                         "ineligibility_reason": "session_not_attachable"}),
    ({}, True, False, {"state": "idle", "health": "healthy", "attachable": True, "eligible_for_wake": True}),
    ({}, True, True, {"state": "prompting", "active_prompt": True, "eligible_for_wake": False,
                      "ineligibility_reason": "session_prompt_active"}),
    ({}, False, False, {"health": "degraded", "attachable": False}),  # ready, but its process is gone
    ({"attention": "stop_verification_failed"}, True, False, {"health": "degraded"}),
    ({"failure": {"kind": "process_exit"}}, True, False, {"health": "healthy", "attachable": False}),
    ({"archived": True}, None, False, {"eligible_for_wake": False}),
])
def test_one_health_function_for_stored_and_live_sessions(changes, bound, prompting, expected):
    health = serialize.health(_record(**changes), bound, prompting)
    assert {k: health[k] for k in expected} == expected
