"""Public create makes user sessions only; coordinator, system and spawned sessions are the daemon's
own, made through its internal path, and only user sessions can be rewound, continued or forked."""

import pytest

from compozy.config import from_document
from compozy.errors import CompozyError
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.records.creation import create_session
from compozy.states import SessionType

DAEMON_TYPES = (SessionType.COORDINATOR, SessionType.SYSTEM, SessionType.SPAWNED)


@pytest.fixture
def manager(home):
    manager = SessionManager(Home(home), from_document({})).start()
    yield manager
    manager.shutdown()


@pytest.mark.parametrize("session_type", DAEMON_TYPES)
def test_public_create_of_a_daemon_managed_type_is_refused_and_creates_nothing(manager, workspace, session_type):
    parent = manager.create_session({"workspace_path": str(workspace)})["session"]
    for body in ({"workspace_path": str(workspace), "type": str(session_type)},
                 {"workspace_path": str(workspace), "type": str(session_type), "parent_session_id": parent["id"]}):
        with pytest.raises(CompozyError) as refused:
            manager.create_session(body)
        assert refused.value.code == "invalid_request" and refused.value.details == {"field": "type"}
    assert [s["id"] for s in manager.list_sessions()["sessions"]] == [parent["id"]]


@pytest.mark.parametrize("session_type", DAEMON_TYPES)
def test_a_daemon_managed_session_is_made_internally_and_is_not_derivable(manager, workspace, session_type):
    record = create_session({"workspace_path": str(workspace)}, config=manager.services.config,
                            workspaces=manager.workspaces, store=manager.store, session_type=session_type)
    assert manager.get_session(record.id)["session"]["type"] == session_type
    fences = {"expected_epoch": 0, "expected_generation": 0, "expected_max_sequence": 0}
    refusals = (lambda: manager.rewind(record.id, record.workspace_id, {"message_id": "m1", "idempotency_key": "r1", **fences}),
                lambda: manager.continue_session(record.id, record.workspace_id, {"agent_name": "general", "idempotency_key": "c1"}),
                lambda: manager.fork_session(record.id, record.workspace_id, {"idempotency_key": "f1"}))
    for refusal in refusals:
        with pytest.raises(CompozyError) as refused:
            refusal()
        assert refused.value.code == "session_not_derivable"
