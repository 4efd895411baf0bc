"""An illegal transition never wedges a session (issue 20, item 2).

A refusal from Machine.check on a live path is a bug; these tests put a session in the state such a bug
leaves (a stored runtime status no process backs, written past the table as the bug did) and check what
the daemon does with it: one log line naming the session and both states, a stored failure naming the
refused edge (`internal_error`), the turn ended with an error (or refused before it started), the runtime
stopped and unbound, and the next prompt runs to done. In-process, with the reference agent.
"""

import logging
import os
import signal

import pytest

from compozy.config import from_document
from compozy.errors import CompozyError
from compozy.manager import SessionManager
from compozy.paths import Home
from tests.harness.api import wait_for

WITHIN = 30.0


def _wait(predicate, what):
    return wait_for(predicate, timeout=WITHIN, interval=0.02, what=what)


def _events(manager, session_id, **query):
    return manager.events(session_id, None, query)["events"]


def _ended(manager, session_id, turn_id):
    return _events(manager, session_id, turn_id=turn_id, type="done,error")


def _run(manager, session_id, message):
    turn_id = manager.prompt(session_id, None, {"message": message})["prompt"]["turn_id"]
    return _wait(lambda: _ended(manager, session_id, turn_id), f"the end of {message!r}")


def _stale_status(session, status):
    """What the bug left: a stored status no process backs, written past the runtime table."""
    session.save(runtime=session.record.runtime.replace(status=status))


@pytest.fixture
def manager(home):
    manager = SessionManager(Home(home), from_document({})).start()
    yield manager
    manager.shutdown()


def _illegal_lines(caplog):
    return [r for r in caplog.records if "illegal runtime transition" in r.getMessage()]


@pytest.mark.illegal_transitions("runtime:recovering->binding")
def test_a_bind_refused_by_the_table_is_answered_stored_and_settled(manager, workspace, caplog):
    session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    assert _run(manager, session_id, "warm")[0]["type"] == "done"
    session = manager.live[session_id]
    manager.binder.retire(session)
    _stale_status(session, "recovering")
    with pytest.raises(CompozyError) as refused:
        manager.prompt(session_id, None, {"message": "after the bug"})
    assert refused.value.code == "internal_error"
    assert refused.value.details["transition"] == "runtime:recovering->binding"
    warning = _events(manager, session_id, type="runtime_warning")[-1]["content"]
    assert warning["failure"] == {"kind": "unknown_failure", "code": "internal_error",
                                  "summary": "internal error: illegal runtime transition recovering -> binding",
                                  "transition": "runtime:recovering->binding"}
    read = manager.get_session(session_id)["session"]
    assert read["runtime"]["status"] == "unbound" and read["failure"]["transition"] == "runtime:recovering->binding"
    assert _run(manager, session_id, "[recall] next")[0]["content"]["stop_reason"] == "end_turn"
    read = manager.get_session(session_id)["session"]
    assert read["runtime"]["status"] == "ready" and "failure" not in read
    lines = _illegal_lines(caplog)
    assert len(lines) == 1 and session_id in lines[0].getMessage(), [r.getMessage() for r in lines]


@pytest.mark.illegal_transitions("runtime:binding->recovering")
def test_a_turn_broken_by_an_illegal_transition_ends_with_an_error_and_the_next_prompt_runs(manager, workspace,
                                                                                           caplog):
    session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    turn_id = manager.prompt(session_id, None, {"message": "[hold g] held"})["prompt"]["turn_id"]
    _wait(lambda: _events(manager, session_id, turn_id=turn_id, type="agent_message"), "the held turn's output")
    session = manager.live[session_id]
    lost = session.runtime
    _stale_status(session, "binding")
    os.killpg(lost.process.identity.pgid, signal.SIGKILL)  # recovery starts, from a status no table allows
    ended = _wait(lambda: _ended(manager, session_id, turn_id), "the broken turn's end")
    assert [e["type"] for e in ended] == ["error"]
    assert ended[0]["content"]["code"] == "internal_error"
    assert ended[0]["content"]["failure"]["transition"] == "runtime:binding->recovering"
    read = manager.get_session(session_id)["session"]
    assert read["state"] == "active" and read["runtime"]["status"] == "unbound"
    assert _run(manager, session_id, "[recall] next")[0]["content"]["stop_reason"] == "end_turn"
    lines = _illegal_lines(caplog)
    assert len(lines) == 1 and session_id in lines[0].getMessage() and "binding -> recovering" in \
        lines[0].getMessage()


@pytest.mark.illegal_transitions("runtime:recovering->binding", "boot:queue:queued->sent")
def test_the_suite_fails_on_an_illegal_transition_in_a_daemon_log(tmp_path):
    """The harness check itself: a daemon's log line is found once, and a test's mark allows it."""
    from tests.harness import transitions
    log = tmp_path / "home" / "logs" / "compozy.log"
    log.parent.mkdir(parents=True)
    log.write_text("2026-01-01 INFO compozy.binding bound\n"
                   "2026-01-01 ERROR compozy.safety session sess_1: illegal runtime transition recovering -> binding\n")
    found = transitions.daemon_log_findings(tmp_path)
    assert [edge for edge, _ in found] == ["runtime:recovering->binding"]
    assert transitions.unexpected(found, {"runtime:recovering->binding"}) == []
    watch = transitions.RecordWatch()
    logging.getLogger("compozy.test").addHandler(watch)
    try:
        logging.getLogger("compozy.test").error("illegal queue repair queued -> sent")
    finally:
        logging.getLogger("compozy.test").removeHandler(watch)
    assert [edge for edge, _ in watch.found] == ["boot:queue:queued->sent"]
