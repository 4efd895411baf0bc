"""Twenty clients retrying the same prompt at once (issue 9): exactly one effect, every other answer
`replayed` (the same turn, the same queue entry) or a stable conflict. On a session that was never
bound (the retries race the first bind), on a busy session (queued, and interrupting), and with one
key sent with twenty different bodies. Real daemon, real HTTP, one connection per client, released
together by a barrier; the effect is read from the session's events.db. Rewind, continue and fork
retries are in tests/test_derive_concurrency.py."""

from pathlib import Path

import pytest

from compozy.errors import CompozyError
from tests.harness.api import at_once, spath, wait_for
from tests.harness.runner import read_events

CLIENTS = 20


@pytest.fixture
def api(daemon):
    return daemon.client(timeout=60)


@pytest.fixture
def session(api, workspace):
    document = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    yield document
    _open_gate(workspace)
    try:
        api.call("POST", spath(document, "stop"), {"wait": True})
    except CompozyError as error:  # a stop already running: the daemon fixture's shutdown ends it
        assert error.code == "session_stop_in_progress", error


def _open_gate(workspace):
    (Path(workspace) / ".compozy-gates").mkdir(exist_ok=True)
    (Path(workspace) / ".compozy-gates" / "g").write_text("open\n")


def _runs_of(home, session, message_id):
    return [e for e in read_events(home, session["id"], "user_message") if e["content"].get("message_id") == message_id]


def _ended(home, session, turn_id):
    return [e for e in read_events(home, session["id"]) if e["turn_id"] == turn_id and e["type"] in ("done", "error")]


def _one_effect(answers, status):
    """One answer admitted afresh, the others its replay: the same turn and the same entry."""
    assert all(code == status for code, _ in answers), answers
    prompts = [document["prompt"] for _, document in answers]
    assert sorted(p["replayed"] for p in prompts) == [False] + [True] * (CLIENTS - 1), prompts
    assert len({(p["turn_id"], p.get("entry_id"), p["disposition"]) for p in prompts}) == 1, prompts
    return prompts[0]


def _hold(api, home, session):
    turn_id = api.call("POST", spath(session, "prompt"), {"message": "[hold g] busy"})[1]["prompt"]["turn_id"]
    wait_for(lambda: [e for e in read_events(home, session["id"], "agent_message")
                      if e["turn_id"] == turn_id and e["content"].get("text") == "holding g "], what="the held turn")
    return turn_id


def test_twenty_identical_first_prompts_start_one_turn(daemon, api, home, session):
    body = {"message": "[chunks 3] once", "message_id": "m1", "idempotency_key": "k1"}
    prompt = _one_effect(at_once(daemon.http_url, "POST", spath(session, "prompt"), [body] * CLIENTS), 200)
    assert prompt["disposition"] == "started"
    wait_for(lambda: _ended(home, session, prompt["turn_id"]), what="the turn's end")
    assert len(_runs_of(home, session, "m1")) == 1 and len(_ended(home, session, prompt["turn_id"])) == 1
    assert len({e["turn_id"] for e in read_events(home, session["id"], "user_message")}) == 1


@pytest.mark.parametrize("mode, status, disposition", [("queue", 202, "queued"), ("interrupt", 200, "interrupted")])
def test_twenty_identical_prompts_to_a_busy_session_act_once(daemon, api, home, workspace, session, mode, status, disposition):
    held = _hold(api, home, session)
    body = {"message": "[chunks 2] next", "message_id": "m2", "idempotency_key": "k2", "mode": mode}
    prompt = _one_effect(at_once(daemon.http_url, "POST", spath(session, "prompt"), [body] * CLIENTS), status)
    assert prompt["disposition"] == disposition
    if mode == "queue":
        entries = api.call("GET", spath(session, "prompt", "queue"))[1]["entries"]
        assert [e["id"] for e in entries] == [prompt["entry_id"]]
    else:
        wait_for(lambda: _ended(home, session, held), what="the interrupted turn's end")
    _open_gate(workspace)
    wait_for(lambda: _ended(home, session, prompt["turn_id"]), what="the retried prompt's turn")
    assert len(_runs_of(home, session, "m2")) == 1
    assert len(_ended(home, session, held)) == 1 and len(_ended(home, session, prompt["turn_id"])) == 1


def test_one_key_with_twenty_different_bodies_admits_one(daemon, api, home, session):
    bodies = [{"message": f"[chunks 1] body {i}", "message_id": "m3", "idempotency_key": "k3"} for i in range(CLIENTS)]
    answers = at_once(daemon.http_url, "POST", spath(session, "prompt"), bodies)
    admitted = [document["prompt"] for code, document in answers if code == 200]
    refused = sorted(document for code, document in answers if code != 200)
    assert len(admitted) == 1 and not admitted[0]["replayed"], answers
    assert refused == ["idempotency_conflict"] * (CLIENTS - 1), answers
    wait_for(lambda: _ended(home, session, admitted[0]["turn_id"]), what="the admitted turn")
    assert len(read_events(home, session["id"], "user_message")) == 1
