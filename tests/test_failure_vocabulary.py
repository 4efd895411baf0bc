"""Failures are named by their evidence, and a runtime the live process cannot take replaces it.

A restart refused for authentication records provider_auth_failure (not always startup_failure);
a prompt whose runtime needs an option value the running agent does not offer starts a replacement
process that does (the seed: configure in place only when the live options allow it), and when no
process offers it the refusal leaves the old agent serving. Real managers, real reference agents.
"""

import pytest

from compozy.config import from_document, reference_command
from compozy.errors import CompozyError
from compozy.manager import SessionManager
from compozy.paths import Home
from tests.harness.api import wait_for


def _manager(home, providers):
    command = list(reference_command())
    config = from_document({"providers": {name: {"command": command, "env": env} for name, env in providers.items()}})
    return SessionManager(Home(home), config).start()


def _turn(manager, session, body):
    turn_id = manager.prompt(session["id"], session["workspace_id"], body)["prompt"]["turn_id"]
    ends = wait_for(lambda: manager.events(session["id"], None, {"turn_id": turn_id, "type": "done,error"})["events"],
                    what=f"end of turn {turn_id}")
    assert ends[0]["type"] == "done", ends
    return turn_id


def test_a_restart_refused_for_authentication_records_provider_auth_failure(home, workspace):
    manager = _manager(home, {"locked": {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1", "COMPOZY_REFERENCE_AUTH_REFUSE": "1"}})
    try:
        session = manager.create_session({"workspace_path": str(workspace)})["session"]
        _turn(manager, session, {"message": "first"})
        manager.stop_session(session["id"], session["workspace_id"], {"wait": True})
        with pytest.raises(CompozyError) as refused:
            manager.prompt(session["id"], session["workspace_id"],
                           {"message": "again", "runtime": {"provider": "locked"}})
        assert refused.value.code == "provider_auth_failure"
        stopped = manager.get_session(session["id"])["session"]
        assert stopped["state"] == "stopped" and stopped["stop_reason"] == "error"
        assert stopped["failure"]["kind"] == "provider_auth_failure"
    finally:
        manager.shutdown()


def test_a_value_the_live_process_does_not_offer_replaces_the_process(home, workspace, tmp_path):
    models = tmp_path / "models"
    models.write_text("echo-1")
    manager = _manager(home, {"listed": {"COMPOZY_REFERENCE_MODELS_FILE": str(models)}})
    try:
        session = manager.create_session({"workspace_path": str(workspace)})["session"]
        _turn(manager, session, {"message": "first", "runtime": {"provider": "listed"}})
        first_pid = manager.get_session(session["id"])["session"]["runtime"]["process"]["pid"]
        models.write_text("echo-1,echo-9")  # offered by a process started from now on only
        _turn(manager, session, {"message": "[recall] second", "runtime": {"provider": "listed", "model": "echo-9"}})
        runtime = manager.get_session(session["id"])["session"]["runtime"]
        assert runtime["effective"]["model"] == "echo-9" and runtime["process"]["pid"] != first_pid
        with pytest.raises(CompozyError) as refused:  # offered by no process: refused, the agent stays
            manager.prompt(session["id"], session["workspace_id"],
                           {"message": "third", "runtime": {"provider": "listed", "model": "echo-404"}})
        assert refused.value.code == "model_unavailable"
        runtime = manager.get_session(session["id"])["session"]["runtime"]
        assert runtime["status"] == "ready" and runtime["effective"]["model"] == "echo-9"
        _turn(manager, session, {"message": "fourth", "runtime": {"provider": "listed"}})
    finally:
        manager.shutdown()
