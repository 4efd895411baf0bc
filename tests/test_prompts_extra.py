"""Prompt-turn behaviour a scenario cannot set up: symlinks planted in the workspace before the turn.

A scenario has no step that creates files or links, so the end-to-end check that the daemon's
fs/* handlers follow symlinks (and refuse the ones that leave the workspace) lives here. It drives
the real reference agent through a real daemon, like the scenarios do.
"""

import json
import os
import time

from tests.harness.api import TURN_TIMEOUT, run_turn as _run_turn, spath as _spath


def test_symlinks_are_followed_and_escapes_through_them_refused(daemon, tmp_path):
    workspace = (tmp_path / "ws")
    outside = (tmp_path / "outside")
    (workspace / "real").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (workspace / "real" / "inside.txt").write_text("fine")
    os.symlink(outside, workspace / "escape")             # a directory link that leaves the workspace
    os.symlink(outside / "secret.txt", workspace / "s.txt")  # a file link that leaves it
    os.symlink(workspace / "real", workspace / "alias")   # a link that stays inside

    api = daemon.client(timeout=30)
    _, created = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve())})
    session = created["session"]
    try:
        chunks = _run_turn(api, session, "[read alias/inside.txt] [read escape/secret.txt] [read s.txt] "
                                         "[write escape/planted.txt nope] [write alias/new.txt yes] done")
        texts = [e["content"].get("text", "") for e in chunks if e["type"] == "agent_message"]
        assert texts[0] == "read: fine "
        assert texts[1].startswith("read refused: access denied")
        assert texts[2].startswith("read refused: access denied")
        assert texts[3].startswith("write refused: access denied")
        assert texts[4] == "wrote alias/new.txt "
        assert texts[-1] == "echo: done"
        assert chunks[-1]["type"] == "done" and chunks[-1]["content"]["stop_reason"] == "end_turn"
        assert "top secret" not in "".join(texts)
        assert not (outside / "planted.txt").exists()
        assert (workspace / "real" / "new.txt").read_text() == "yes"
    finally:
        api.call("POST", _spath(session, "stop"), {"wait": True})


def test_stop_during_restart_waits_for_setup_then_stops(home, tmp_path):
    """starting -> stopping: a stop that arrives while a restart prompt is still binding waits for the
    setup to finish, then stops verified; the admitted turn ends cancelled. A scenario cannot express
    this (every prompt op returns only after binding), so it runs here with a slow-starting provider."""
    import sys
    import threading

    from tests.harness.daemon import DaemonProcess

    workspace = tmp_path / "ws"
    workspace.mkdir()
    slow = f"sleep 2; exec {sys.executable} -m compozy.agents.reference"
    (home / "config.toml").write_text(f'[providers.slow]\ncommand = ["sh", "-c", {json.dumps(slow)}]\n\n'
                                      '[agents.slow]\nprovider = "slow"\n')
    daemon = DaemonProcess(home).start()
    try:
        api = daemon.client(timeout=60)
        _, created = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve()),
                                                        "agent_name": "slow"})
        session = created["session"]
        assert _run_turn(api, session, "one")[-1]["content"]["stop_reason"] == "end_turn"
        _, outcome = api.call("POST", _spath(session, "stop"), {"wait": True})
        assert outcome["state"] == "stopped" and outcome["verified"] is True

        answers = {}

        def restart():
            try:
                answers["prompt"] = api.call("POST", _spath(session, "prompt"), {"message": "two"})[1]
            except Exception as exc:  # noqa: BLE001 (reported below)
                answers["error"] = exc

        thread = threading.Thread(target=restart)
        thread.start()
        deadline = time.monotonic() + 5
        state = None
        while time.monotonic() < deadline:
            state = api.call("GET", _spath(session))[1]["session"]["state"]
            if state == "starting":
                break
            time.sleep(0.05)
        assert state == "starting"
        _, outcome = api.call("POST", _spath(session, "stop"), {"wait": True})
        thread.join(30)
        assert outcome["state"] == "stopped" and outcome["verified"] is True, outcome
        assert "error" not in answers, answers
        assert answers["prompt"]["prompt"]["disposition"] == "started"
        turn_id = answers["prompt"]["prompt"]["turn_id"]
        _, document = api.call("GET", _spath(session))
        assert document["session"]["state"] == "stopped"
        assert "acp_caps" not in document["session"]["runtime"]
        _, page = api.call("GET", _spath(session, "events"), query={"turn_id": turn_id})
        assert [e["type"] for e in page["events"]] == ["user_message", "done"]
        assert page["events"][-1]["content"]["stop_reason"] == "cancelled"
    finally:
        daemon.stop()


def test_prompt_right_after_done_starts_a_new_turn(daemon, tmp_path):
    """Once a turn's done has been delivered, the session is idle: the very next prompt starts a turn.

    The streaming form returns the moment `done` is forwarded, so a script that runs
    `compozy session prompt` twice in a row sends the second prompt immediately. It must never be
    treated as busy input (steered into, queued behind or interrupting the turn that already ended).
    A race like this needs many quick iterations, which a scenario cannot loop.
    """
    workspace = tmp_path / "ws"
    workspace.mkdir()
    api = daemon.client(timeout=30)
    _, created = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve())})
    session = created["session"]
    refused = []
    try:
        for index in range(40):
            frames = list(api.stream("POST", _spath(session, "prompt"), {"message": f"first {index}"}))
            assert frames[0][0] == "prompt" and frames[-1][1]["type"] == "done", frames[-1]
            _, document = api.call("POST", _spath(session, "prompt"), {"message": f"second {index}"})
            admission = document["prompt"]
            if admission["disposition"] != "started":
                refused.append(admission)
            turn_id = admission["turn_id"]
            deadline = time.monotonic() + TURN_TIMEOUT
            while not api.call("GET", _spath(session, "events"),
                               query={"turn_id": turn_id, "type": "done,error"})[1]["events"]:
                assert time.monotonic() < deadline, f"turn {turn_id} did not end"
                time.sleep(0.02)
        assert refused == [], f"{len(refused)}/40 prompts sent right after done were not started: {refused[:2]}"
    finally:
        api.call("POST", _spath(session, "stop"), {"wait": True})
