"""Hooks in-process with the real manager: the attention hook, bounded output, a hook that cannot start,
and the daemon's shutdown ending a hook still running. The other events are scenarios in spec/hooks/."""

import json
import time

import pytest

from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.lifecycle.hooks import OUTPUT_LIMIT


def manager_with(home, hooks):
    return SessionManager(Home(home), from_document({"hooks": hooks})).start()


def runs(manager, session_id, count, within=15.0):
    deadline = time.monotonic() + within
    while True:
        found = manager.inspect_session(session_id)["hook_runs"]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.fixture
def make(home):
    managers = []

    def build(hooks):
        managers.append(manager_with(home, hooks))
        return managers[-1]
    yield build
    for manager in managers:
        manager.shutdown()


def test_attention_changes_run_their_hook_with_old_and_new(make, workspace):
    manager = make([{"event": "session.attention.changed", "command": "cat", "timeout": "10s"}])
    session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    session = manager._session(session_id)
    session.save(attention="stop_verification_failed")
    session.save(attention="stop_verification_failed")  # unchanged: no second run
    session.save(attention=None)
    found = runs(manager, session_id, 2)
    time.sleep(0.5)
    assert len(manager.inspect_session(session_id)["hook_runs"]) == 2
    events = {(json.loads(run["output"])["previous"], json.loads(run["output"])["attention"]) for run in found}
    assert events == {(None, "stop_verification_failed"), ("stop_verification_failed", None)}
    payload = json.loads(found[0]["output"])
    assert payload["event"] == "session.attention.changed" and payload["session_id"] == session_id


def test_output_is_bounded_and_a_missing_command_is_a_recorded_run(make, workspace):
    manager = make([{"event": "session.post_create", "command": "cat >/dev/null; head -c 100000 /dev/zero | tr '\\0' x",
                     "timeout": "10s"},
                    {"event": "session.post_create", "command": ["/nonexistent/hook"], "timeout": "10s"}])
    session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    found = {run["command"][0]: run for run in runs(manager, session_id, 2)}
    bounded = found["/bin/sh"]
    assert bounded["exit_code"] == 0 and bounded["truncated"] is True and len(bounded["output"]) == OUTPUT_LIMIT
    missing = found["/nonexistent/hook"]
    assert missing["exit_code"] is None and "cannot start" in missing["error"]
    assert manager.get_session(session_id)["session"]["state"] == "active"


def test_shutdown_ends_a_hook_still_running(home, workspace):
    manager = manager_with(home, [{"event": "session.post_create", "command": ["sleep", "60"], "timeout": "60s"}])
    session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    deadline = time.monotonic() + 10
    while not manager.observers["hooks"].running and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    manager.shutdown()
    manager = manager_with(home, [])
    try:
        found = runs(manager, session_id, 1)
        assert found[0]["exit_code"] == -9 and time.monotonic() - started < 30
    finally:
        manager.shutdown()


def test_a_hook_gets_no_secret_of_the_daemons_and_inspect_shows_none_it_printed(home, workspace, monkeypatch):
    """Hooks run in the agents' workspace: they get the daemon's environment without its token or any other
    secret-named variable, and what they print (or their command holds) is redacted before it is kept."""
    monkeypatch.setenv("COMPOZY_TOKEN", "daemon-token-0123456789")
    monkeypatch.setenv("EXAMPLE_API_KEY", "apikey-0123456789")
    printed = "apikey-0123456789 daemon-token-0123456789 providerkey-123456789 PASSWORD=hunter2-hunter2"
    manager = SessionManager(Home(home), from_document({
        "providers": {"reference": {"command": ["python3", "-m", "compozy.agents.reference"],
                                    "env": {"REFERENCE_API_KEY": "providerkey-123456789"}}},
        "hooks": [{"event": "session.post_create", "timeout": "10s",
                   "command": f"cat >/dev/null; env | cut -d= -f1; echo '{printed}'"},
                  {"event": "session.post_create", "timeout": "10s",
                   "command": ["sh", "-c", "cat >/dev/null", "Authorization: Bearer sk-live-0123456789"]}]})).start()
    try:
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        found = runs(manager, session_id, 2)
    finally:
        manager.shutdown()
    shown = json.dumps(found)
    printing = next(run for run in found if "cut" in " ".join(run["command"]))
    names = printing["output"].splitlines()[:-1]
    assert "COMPOZY_HOOK_EVENT" in names and "PATH" in names
    assert "COMPOZY_TOKEN" not in names and "EXAMPLE_API_KEY" not in names
    for secret in ("apikey-0123456789", "daemon-token-0123456789", "providerkey-123456789", "hunter2",
                   "sk-live-0123456789"):
        assert secret not in shown
    assert printing["output"].splitlines()[-1] == "[redacted] [redacted] [redacted] PASSWORD=[redacted]"
