"""Busy input under concurrency, against the real daemon over HTTP.

Fifty clients prompt one busy session at the same instant: every admitted prompt runs exactly
once, in admission order, and every refused one leaves no trace. Two clients prompting an idle
session at the same instant get one `started` and one `queued`, never two running turns.
The trace is read straight from the session's events.db and the catalog (compozy.db).
"""

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tests.harness.api import path_of
from compozy.errors import CompozyError
from tests.harness.runner import read_events

PROMPTS = 50
QUEUE_CAP = 10
WAIT = 60.0


# -- helpers -------------------------------------------------------------------------------

def catalog_rows(home, table, session_id):
    connection = sqlite3.connect(f"file:{Path(home) / 'compozy.db'}?mode=ro", uri=True, timeout=5)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in connection.execute(f"SELECT * FROM {table} WHERE session_id = ?", (session_id,))]
    finally:
        connection.close()


def wait_for(predicate, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def terminal_count(home, session_id):
    return sum(1 for e in read_events(home, session_id) if e["type"] in ("done", "error"))


def open_gate(workspace, name):
    gates = Path(workspace) / ".compozy-gates"
    gates.mkdir(exist_ok=True)
    (gates / name).write_text("open\n")


def fire_together(client, path, bodies):
    """POST every body from its own thread, released by one barrier; [(status, document|error)]."""
    barrier = threading.Barrier(len(bodies))
    outcomes = [None] * len(bodies)

    def send(index, body):
        barrier.wait()
        try:
            outcomes[index] = client.call("POST", path, body)
        except CompozyError as exc:
            outcomes[index] = (exc.http_status if hasattr(exc, "http_status") else None, exc)

    threads = [threading.Thread(target=send, args=(i, b)) for i, b in enumerate(bodies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert all(o is not None for o in outcomes), "a prompt request never answered"
    return outcomes


def check_turns_never_overlap(events):
    """Each turn: one user_message first, exactly one done/error, and no other turn's events between."""
    spans = {}
    for event in events:
        turn = event["turn_id"]
        if turn is None or event["type"] in ("transcript_marker.created",):
            continue  # markers may name a turn from the admission path while another runs
        if event["type"] == "user_message" and not event["content"].get("steer"):
            assert turn not in spans, f"turn {turn} has two user_message events"
            spans[turn] = {"start": event["sequence"], "end": None, "terminals": 0}
            continue
        assert turn in spans, f"event {event['sequence']} ({event['type']}) of turn {turn} before its user_message"
        if event["type"] in ("done", "error"):
            spans[turn]["terminals"] += 1
            spans[turn]["end"] = event["sequence"]
    for turn, span in spans.items():
        assert span["terminals"] == 1, f"turn {turn} ended {span['terminals']} times"
    ordered = sorted(spans.values(), key=lambda s: s["start"])
    for earlier, later in zip(ordered, ordered[1:]):
        assert earlier["end"] < later["start"], f"two turns ran at once: {earlier} and {later}"
    return spans


# -- fixtures ------------------------------------------------------------------------------

@pytest.fixture
def busy_daemon(home, request):
    """The real daemon, started after config.toml is written into its home."""
    (home / "config.toml").write_text(
        "[session.busy_input]\n"
        f"default_mode = \"queue\"\nqueue_cap = {QUEUE_CAP}\n")
    return request.getfixturevalue("daemon")


def create_session(client, workspace):
    _, document = client.call("POST", "/api/sessions", {"workspace_path": str(workspace)})
    session = document["session"]
    return session["id"], session["workspace_id"]


def stop_session(client, workspace_id, session_id):
    try:
        client.call("POST", path_of("api", "workspaces", workspace_id, "sessions", session_id, "stop"),
                    {"wait": True})
    except CompozyError:
        pass


# -- fifty prompts at once ------------------------------------------------------------------

def test_fifty_simultaneous_prompts_run_once_in_admission_order(busy_daemon, home, workspace):
    client = busy_daemon.client(timeout=WAIT)
    session_id, workspace_id = create_session(client, workspace)
    base = path_of("api", "workspaces", workspace_id, "sessions", session_id)
    try:
        status, document = client.call("POST", base + "/prompt", {
            "message": "[hold g1] first", "message_id": "m-first", "idempotency_key": "k-first"})
        assert status == 200 and document["prompt"]["disposition"] == "started"
        first_turn = document["prompt"]["turn_id"]
        wait_for(lambda: any(e["turn_id"] == first_turn and e["content"].get("text") == "holding g1 "
                             for e in read_events(home, session_id, "agent_message")), "the held turn")

        bodies = [{"message": f"prompt {i:02d}", "message_id": f"m{i:02d}", "idempotency_key": f"k{i:02d}",
                   "mode": "queue"} for i in range(PROMPTS)]
        outcomes = fire_together(client, base + "/prompt", bodies)

        admitted, refused = {}, set()
        for body, (status, answer) in zip(bodies, outcomes):
            if isinstance(answer, CompozyError):
                assert (status, answer.code) == (413, "queue_full"), f"{body['message_id']}: {status} {answer}"
                refused.add(body["message_id"])
                continue
            prompt = answer["prompt"]
            assert status == 202, f"{body['message_id']}: HTTP {status} {prompt}"
            assert prompt["disposition"] == "queued" and prompt["replayed"] is False, prompt
            assert prompt["message_id"] == body["message_id"] and prompt["entry_id"], prompt
            admitted[body["message_id"]] = prompt
        assert len(admitted) + len(refused) == PROMPTS
        # The held turn runs the whole time, so exactly the cap is admitted and the rest refused.
        assert len(admitted) == QUEUE_CAP, (len(admitted), sorted(admitted))
        assert len({p["entry_id"] for p in admitted.values()}) == QUEUE_CAP
        assert len({p["turn_id"] for p in admitted.values()}) == QUEUE_CAP

        # Admission order: the daemon-owned queue, in run order, with strictly rising positions.
        _, queue = client.call("GET", base + "/prompt/queue")
        entries = queue["entries"]
        assert [e["message_id"] for e in entries if e["message_id"] in admitted] == \
            [e["message_id"] for e in entries], "the queue lists a prompt that was refused"
        assert {e["message_id"] for e in entries} == set(admitted)
        positions = [e["position"] for e in entries]
        assert positions == sorted(positions) and len(set(positions)) == len(positions), positions
        for entry in entries:
            assert entry["id"] == admitted[entry["message_id"]]["entry_id"]
            assert entry["turn_id"] == admitted[entry["message_id"]]["turn_id"]
            assert entry["status"] == "queued"
        admission_order = [e["message_id"] for e in entries]
        # The prompt_queued markers were written in the same order as the entries were created.
        markers = [e["content"]["marker"]["evidence"]["message_id"]
                   for e in read_events(home, session_id, "transcript_marker.created")
                   if e["content"]["marker"]["kind"] == "prompt_queued"]
        assert markers == admission_order

        # A retry while queued returns the same entry; a refused prompt is still refused.
        replay_id = admission_order[0]
        status, answer = client.call("POST", base + "/prompt", bodies[int(replay_id[1:])])
        assert status == 202 and answer["prompt"]["replayed"] is True
        assert answer["prompt"]["entry_id"] == admitted[replay_id]["entry_id"]

        open_gate(workspace, "g1")
        wait_for(lambda: terminal_count(home, session_id) >= 1 + QUEUE_CAP, "every admitted turn to end")
        time.sleep(0.3)  # nothing more may run: a late extra turn would show up here
        events = read_events(home, session_id)
        spans = check_turns_never_overlap(events)
        assert len(spans) == 1 + QUEUE_CAP, f"{len(spans)} turns ran"

        users = [e for e in events if e["type"] == "user_message"]
        ran = [e["content"]["message_id"] for e in users]
        assert ran == ["m-first"] + admission_order, ran
        for event in users[1:]:
            message_id = event["content"]["message_id"]
            assert event["turn_id"] == admitted[message_id]["turn_id"]
            assert event["content"]["text"] == f"prompt {message_id[1:]}"
        for turn_id, span in spans.items():
            terminal = next(e for e in events if e["sequence"] == span["end"])
            assert terminal["type"] == "done" and terminal["content"]["stop_reason"] == "end_turn", terminal

        # Refused prompts left no trace: no user message, no queue row in any state, no admission,
        # no marker naming them.
        assert not refused & set(ran)
        queue_rows = catalog_rows(home, "input_queue", session_id)
        assert {r["message_id"] for r in queue_rows} == set(admitted)
        assert all(r["status"] == "sent" for r in queue_rows), [(r["message_id"], r["status"]) for r in queue_rows]
        admissions = catalog_rows(home, "admissions", session_id)
        assert not refused & {r["message_id"] for r in admissions}
        assert not {f"k{m[1:]}" for m in refused} & {r["idempotency_key"] for r in admissions}
        for event in read_events(home, session_id, "transcript_marker.created"):
            assert not refused & {(event["content"]["marker"].get("evidence") or {}).get("message_id")}
        _, queue = client.call("GET", base + "/prompt/queue")
        assert queue["entries"] == []

        # With no trace left, the same keys are admitted afresh once there is room.
        retry = bodies[int(sorted(refused)[0][1:])]
        status, answer = client.call("POST", base + "/prompt", retry)
        assert status == 200 and answer["prompt"]["disposition"] == "started"
        assert answer["prompt"]["replayed"] is False
        wait_for(lambda: terminal_count(home, session_id) >= 2 + QUEUE_CAP, "the retried refused prompt")
    finally:
        open_gate(workspace, "g1")
        stop_session(client, workspace_id, session_id)


# -- two prompts on an idle session -----------------------------------------------------------

@pytest.mark.parametrize("rounds", [6])
def test_two_simultaneous_prompts_on_idle_session_start_one(daemon, home, workspace, rounds):
    client = daemon.client(timeout=WAIT)
    session_id, workspace_id = create_session(client, workspace)
    base = path_of("api", "workspaces", workspace_id, "sessions", session_id)
    ended = 0
    try:
        for number in range(rounds):  # round 0 races the first bind; the others a bound idle session
            gate = f"r{number}"
            bodies = [{"message": f"[hold {gate}] {side} {number}", "message_id": f"m{number}{side}",
                       "idempotency_key": f"k{number}{side}", "mode": "queue"} for side in ("a", "b")]
            outcomes = fire_together(client, base + "/prompt", bodies)
            for status, answer in outcomes:
                assert not isinstance(answer, CompozyError), answer
            dispositions = sorted((o[1]["prompt"]["disposition"], o[0]) for o in outcomes)
            assert dispositions == [("queued", 202), ("started", 200)], dispositions
            started = next(o[1]["prompt"] for o in outcomes if o[1]["prompt"]["disposition"] == "started")
            queued = next(o[1]["prompt"] for o in outcomes if o[1]["prompt"]["disposition"] == "queued")
            assert started["turn_id"] != queued["turn_id"]

            wait_for(lambda: any(e["turn_id"] == started["turn_id"] and e["content"].get("text") == f"holding {gate} "
                                 for e in read_events(home, session_id, "agent_message")), "the started turn")
            time.sleep(0.2)
            assert not [e for e in read_events(home, session_id, "user_message")
                        if e["turn_id"] == queued["turn_id"]], "the queued prompt ran while a turn was running"
            _, queue = client.call("GET", base + "/prompt/queue")
            assert [e["id"] for e in queue["entries"]] == [queued["entry_id"]]

            open_gate(workspace, gate)
            ended += 2
            wait_for(lambda: terminal_count(home, session_id) >= ended, f"round {number} to end")

        events = read_events(home, session_id)
        spans = check_turns_never_overlap(events)
        assert len(spans) == 2 * rounds
        assert all(next(e for e in events if e["sequence"] == s["end"])["content"].get("stop_reason") == "end_turn"
                   for s in spans.values())
    finally:
        for number in range(rounds):
            open_gate(workspace, f"r{number}")
        stop_session(client, workspace_id, session_id)
