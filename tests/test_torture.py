"""Crash torture (issue 9): sessions streaming from the reference agent while the daemon is SIGKILLed
at seeded random moments (some while it boots) and restarted. After every restart nothing a viewer
received is lost or changed, sequences are dense, every turn ends exactly once after boot repair, no
admitted prompt ran twice, retries answer the recorded outcome, and the catalog agrees with the
directories. tests/harness/torture.py holds the workload and the audit.

CI runs a short round. The long round is opt-in:
    COMPOZY_TORTURE=1 [COMPOZY_TORTURE_KILLS=200] [COMPOZY_TORTURE_SEED=n] \
        [COMPOZY_TORTURE_REPORT=figures.json] python3 -m pytest -q -s tests/test_torture.py
"""

import json
import os
import random
import time
import uuid

import pytest

from tests.harness.daemon import DaemonProcess
from tests.harness.runner import kill_marked, read_events
from tests.harness.torture import (Figures, Round, SessionLoad, audit_session, catalog_agrees_with_directories,
                                   kill_during_boot, retry_after_restart)

LONG = os.environ.get("COMPOZY_TORTURE") == "1"
KILLS = int(os.environ.get("COMPOZY_TORTURE_KILLS", "200")) if LONG else 8
SESSIONS = 4 if LONG else 3
SEED = int(os.environ.get("COMPOZY_TORTURE_SEED", "20261203"))


@pytest.fixture
def marked(monkeypatch):
    """Every daemon and agent of the run carries the marker; none may outlive it."""
    value = f"compozy-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("COMPOZY_TEST_MARK", value)
    monkeypatch.setenv("COMPOZY_REFERENCE_CHUNK_DELAY", "0.02")  # turns stream for a while
    yield value
    leaked = kill_marked(value)
    assert leaked == [], f"processes outlived the torture: {leaked}"


@pytest.mark.slow
def test_sigkilled_daemon_loses_nothing_and_runs_nothing_twice(home, tmp_path, marked):
    rng, figures = random.Random(SEED), Figures()
    (home / "config.toml").write_text('[session.busy_input]\ndefault_mode = "interrupt"\n')
    loads, started = [], time.monotonic()
    daemon = DaemonProcess(home).start()
    try:
        client = daemon.client(timeout=60)
        for index in range(SESSIONS):
            workspace = tmp_path / f"workspace-{index}"
            workspace.mkdir()
            session = client.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
            loads.append(SessionLoad(session))
        for number in range(KILLS):
            torture_round = Round(daemon, loads, rng, number)
            torture_round.run(kill_after=rng.uniform(0.05, 2.0))
            figures.kills += 1
            left = {load.session["id"]: read_events(home, load.session["id"]) for load in loads}
            if rng.random() < 0.1:
                kill_during_boot(home, rng.uniform(0.0, 0.6))
                figures.kills += 1
                figures.kills_during_boot += 1
            daemon.start()
            client = daemon.client(timeout=60)
            for load in loads:
                audit_session(client, home, load, left[load.session["id"]], figures)
            catalog_agrees_with_directories(home)
            for load in loads:
                retry_after_restart(client, load, rng, figures)
            _count(torture_round, figures)
    finally:
        daemon.stop()
        figures.events_seen_by_viewers = sum(len(load.seen) for load in loads)
        figures.turns = sum(len({r["turn_id"] for r in read_events(home, load.session["id"], "user_message")})
                            for load in loads)
        figures.events_stored = sum(len(read_events(home, load.session["id"])) for load in loads)
        _report(figures, time.monotonic() - started)  # a round cut short reports what it did
    assert figures.lost == 0
    assert figures.prompts_admitted > KILLS and figures.events_seen_by_viewers > 0, figures


def _count(torture_round, figures):
    for load in torture_round.loads:
        round_sent = [s for s in load.sent if f"r{torture_round.number}p" in s.body["message_id"]]
        figures.prompts_sent += len(round_sent)
        figures.prompts_admitted += sum(1 for s in round_sent if s.answer is not None and not s.answer["replayed"])
        figures.prompts_in_flight_at_kill += sum(1 for s in round_sent if s.in_flight)


def _report(figures, elapsed):
    document = {"seed": SEED, "sessions": SESSIONS, "seconds": round(elapsed, 1), **figures.as_dict()}
    print("torture figures:", json.dumps(document))
    if os.environ.get("COMPOZY_TORTURE_REPORT"):
        with open(os.environ["COMPOZY_TORTURE_REPORT"], "w") as handle:
            json.dump(document, handle, indent=2)
