"""Input sent while automatic recovery replaces a crashed agent (issue 20's live hole).

The agent crashes mid-turn ([crash 1]); during the 1 s backoff the user sends a plain prompt, an
interrupt, a steer, a queued prompt or a cancel. Each is answered at once, the lost turn ends exactly
once, the session never stays `recovering`, and the next prompt runs to done. Real daemon, real
reference agent, real SIGKILL (the directive's own).
"""

import time

import pytest

from tests.harness.api import events, spath, wait_for
from tests.harness.cli import run_cli

ANSWER_WITHIN = 2.0


def _prompt(api, session, message, **fields):
    return api.call("POST", spath(session, "prompt"), {"message": message, **fields})[1]["prompt"]


def _ended(api, session, turn_id):
    return events(api, session, turn_id=turn_id, type="done,error")


def _crashed_turn(api, workspace):
    """A session whose second turn lost its agent and is in recovery's first backoff."""
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    warm = _prompt(api, session, "warm")["turn_id"]
    wait_for(lambda: _ended(api, session, warm), what="the warm turn")
    lost = _prompt(api, session, "boom [crash 1]")["turn_id"]
    wait_for(lambda: events(api, session, turn_id=lost, type="runtime_recovery_started"), what="recovery")
    return session, lost


def _send(api, session, how):
    if how == "cancel":
        return api.call("POST", spath(session, "prompt", "cancel"), {})[1]
    mode = {"plain": None, "interrupt": "interrupt", "steer": "steer", "queue": "queue"}[how]
    return _prompt(api, session, f"replacement by {how}", **({"mode": mode} if mode else {}))


@pytest.mark.parametrize("how", ["plain", "interrupt", "steer", "cancel", "queue"])
def test_input_during_recovery_is_answered_and_the_session_works_after(api, workspace, how):
    session, lost = _crashed_turn(api, workspace)
    started = time.monotonic()
    answer = _send(api, session, how)
    assert time.monotonic() - started < ANSWER_WITHIN, f"{how} took {time.monotonic() - started:.1f}s to answer"
    terminal = wait_for(lambda: _ended(api, session, lost), timeout=30, what="the lost turn's end")
    assert len(terminal) == 1
    if how == "queue":  # queue waits: recovery keeps replaying [crash 1] until it gives up
        assert terminal[0]["type"] == "error" and "recovery exhausted" in terminal[0]["content"]["error"]
    else:
        assert terminal[0]["type"] == "done" and terminal[0]["content"]["stop_reason"] == "cancelled"
    if how not in ("cancel", "queue"):
        replacement = answer["turn_id"]
        done = wait_for(lambda: _ended(api, session, replacement), timeout=30, what="the replacement's end")
        assert [e["type"] for e in done] == ["done"], done
    read = wait_for(lambda: _settled(api, session), timeout=15, what="a settled runtime")
    assert read["runtime"].get("recovery") is None, read["runtime"]
    after = _prompt(api, session, "[recall] after")["turn_id"]
    last = wait_for(lambda: _ended(api, session, after), timeout=30, what="the next prompt's end")
    assert last[0]["type"] == "done" and last[0]["content"]["stop_reason"] == "end_turn", last


def _settled(api, session):
    read = api.call("GET", spath(session))[1]["session"]
    return read if read["runtime"]["status"] in ("ready", "unbound") and not read["activity"]["turn_in_flight"] \
        else None


def test_crash_then_interrupt_from_the_cli_answers_and_the_next_prompt_runs(served, workspace):
    """The issue's own sequence, typed as a user would."""
    home = served.home

    def cli(*args, timeout=60):
        result = run_cli(home, *args, timeout=timeout)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout.strip()
    session_id = cli("session", "new", "-q", "--cwd", str(workspace))
    cli("session", "prompt", session_id, "warm")
    cli("session", "prompt", session_id, "boom [crash 1]", "--detach")
    wait_for(lambda: "runtime_recovery_started" in cli("session", "events", session_id), what="recovery")
    started = time.monotonic()
    replaced = cli("session", "prompt", session_id, "replacement", "--mode", "interrupt", timeout=30)
    assert time.monotonic() - started < 15, "the interrupt's turn did not run to its end"
    assert "echo: replacement" in replaced
    assert "echo: next" in cli("session", "prompt", session_id, "next", timeout=30)
    assert '"status": "ready"' in cli("session", "get", session_id, "-o", "json")


def test_a_cancel_between_the_loss_and_the_first_backoff_leaves_the_runtime_unbound(home, workspace):
    """Found by the state machine: a cancel that lands after the runner saw its agent die but before
    recovery's first backoff began left the lost process's `ready` stored with no process, and the next
    bind was refused by the table (ready -> binding). In-process, the cancel is made to land exactly then."""
    from compozy.config import from_document
    from compozy.manager import SessionManager
    from compozy.paths import Home
    manager = SessionManager(Home(home), from_document({})).start()
    try:
        recovery = manager.engine.runner.recovery
        forget = recovery._forget

        def forget_then_cancel(session, runtime):
            forget(session, runtime)
            manager.cancel_turn(session.id, None, {})
        recovery._forget = forget_then_cancel
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        lost = manager.prompt(session_id, None, {"message": "[crash 1] lost"})["prompt"]["turn_id"]
        ended = wait_for(lambda: manager.events(session_id, None, {"turn_id": lost, "type": "done,error"})["events"],
                         what="the lost turn's end")
        assert [(e["type"], e["content"].get("stop_reason")) for e in ended] == [("done", "cancelled")]
        assert manager.get_session(session_id)["session"]["runtime"]["status"] == "unbound"
        recovery._forget = forget
        after = manager.prompt(session_id, None, {"message": "after"})["prompt"]["turn_id"]
        done = wait_for(lambda: manager.events(session_id, None, {"turn_id": after, "type": "done,error"})["events"],
                        what="the next prompt's end")
        assert done[0]["type"] == "done" and done[0]["content"]["stop_reason"] == "end_turn"
    finally:
        manager.shutdown()
