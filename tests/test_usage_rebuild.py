"""The usage ledger survives losing compozy.db (issue 25 item 5): the catalog is rebuilt from the session
folders at boot, and so are the ledger's rows, from each session's events and the usage they kept. On a
real daemon, its real files and the reference agent's usage reports.
"""

import sys

import pytest

from tests.harness.api import run_turn, spath
from tests.harness.daemon import DaemonProcess
from tests.test_tool_server import create

CONFIG = ('[providers.reference]\ncommand = ["{python}", "-m", "compozy.agents.reference"]\n'
          "[checkpoints]\nenabled = false\n")
SUMMED = ("turns", "archived_turns", "tokens", "cost")  # duration_ms is measured again (between the stored events)


@pytest.fixture
def daemon(home):
    (home / "config.toml").write_text(CONFIG.format(python=sys.executable))
    process = DaemonProcess(home).start()
    yield process
    process.stop()


def sums(document):
    return {name: document[name] for name in SUMMED}


def ledger(api, sessions):
    """Every sum the ledger answers, by each grouping, and each session's turns."""
    found = {}
    for group in ("session", "workspace", "agent", "provider", "model", "day"):
        answer = api.call("GET", "/api/usage", query={"group_by": group})[1]["usage"]
        found[group] = {"total": sums(answer["total"]), "groups": [{"key": g["key"], **sums(g)} for g in answer["groups"]]}
    for session in sessions:
        turns = api.call("GET", spath(session, "usage"))[1]["usage"]["turns"]
        found[session["id"]] = [{k: v for k, v in turn.items() if k not in ("duration_ms", "started_at", "ended_at")}
                                for turn in turns]
    return found


def test_the_ledger_is_rebuilt_from_the_sessions_events_when_compozy_db_is_lost(home, daemon, workspace):
    api = daemon.client(timeout=30)
    first, second = create(api, workspace, name="first"), create(api, workspace, name="second")
    run_turn(api, first, "[usage] one")
    run_turn(api, first, "[usage] two")
    run_turn(api, first, "three, unreported")
    run_turn(api, second, "[usage] [usage] twice")
    # A rewind archives the first session's last two turns: they still count, marked.
    fences = api.call("GET", spath(first))[1]["session"]["fences"]
    message = api.call("GET", spath(first, "history"))[1]["messages"][2]["message_id"]
    api.call("POST", spath(first, "rewind"), {"message_id": message, "idempotency_key": "r1",
                                               "expected_epoch": fences["epoch"],
                                               "expected_generation": fences["generation"],
                                               "expected_max_sequence": fences["max_sequence"]})
    before = ledger(api, (first, second))
    workspaces = api.call("GET", "/api/workspaces")[1]["workspaces"]
    assert before["session"]["total"]["turns"] == 4 and before["session"]["total"]["archived_turns"] == 2
    assert before["agent"]["total"]["cost"] == [{"amount": 1.0, "currency": "USD"}]
    durations = {t["turn_id"]: t["duration_ms"]
                 for t in api.call("GET", spath(first, "usage"))[1]["usage"]["turns"]}

    daemon.stop()
    for name in ("compozy.db", "compozy.db-wal", "compozy.db-shm"):
        (home / name).unlink(missing_ok=True)
    daemon.start()
    api = daemon.client(timeout=30)

    assert ledger(api, (first, second)) == before
    # The lost registry's workspace is registered again under its own ID, so the scoped routes answer.
    assert [(w["id"], w["path"]) for w in api.call("GET", "/api/workspaces")[1]["workspaces"]] == \
        [(w["id"], w["path"]) for w in workspaces]
    rebuilt = {t["turn_id"]: t["duration_ms"] for t in api.call("GET", spath(first, "usage"))[1]["usage"]["turns"]}
    assert rebuilt.keys() == durations.keys()
    assert all(0 <= rebuilt[turn] <= durations[turn] + 1000 for turn in durations)  # between its two events

    # A second boot on the rebuilt catalog adds nothing.
    daemon.stop()
    daemon.start()
    assert ledger(daemon.client(timeout=30), (first, second)) == before
