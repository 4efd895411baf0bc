"""Twenty clients sending the same rewind, continue or fork at once get exactly one effect: every
other answer is the recorded outcome (`replayed`) or a stable conflict. Real daemon, real HTTP, one
connection per client, released together by a barrier."""

from tests.harness.api import at_once, events, run_turn, spath, wait_for

CLIENTS = 20


def _source(daemon, workspace, turns=2):
    api = daemon.client(timeout=30)
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    for number in range(turns):
        turn_id = api.call("POST", spath(session, "prompt"), {"message": f"turn {number}", "message_id": f"m{number}",
                                                              "idempotency_key": f"k{number}"})[1]["prompt"]["turn_id"]
        wait_for(lambda t=turn_id: events(api, session, turn_id=t, type="done"))
    return api, session, api.call("GET", spath(session))[1]["session"]["fences"]


def _fenced(fences):
    return {f"expected_{name}": value for name, value in fences.items()}


def _children(api, session):
    return api.call("GET", "/api/sessions", query={"parent": session["id"]})[1]["sessions"]


def test_twenty_identical_continues_create_one_session_and_send_its_message_once(daemon, workspace):
    api, session, fences = _source(daemon, workspace)
    body = {"agent_name": "general", "idempotency_key": "same", "message": "carry on", **_fenced(fences)}
    answers = at_once(daemon.http_url, "POST", spath(session, "continue"), [body] * CLIENTS)
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * (CLIENTS - 1) + [201], answers
    children = {document["session"]["id"] for _, document in answers}
    assert len(children) == 1 and len(_children(api, session)) == 1
    child = {"id": children.pop(), "workspace_id": session["workspace_id"]}
    wait_for(lambda: events(api, child, type="done"))
    assert [e["content"]["text"] for e in events(api, child, type="user_message")] == ["carry on"]
    assert all(document["derivation"]["first_prompt"] == "admitted" for _, document in answers)
    run_turn(api, session, "the source still answers")


def test_twenty_identical_forks_create_one_session(daemon, workspace):
    api, session, fences = _source(daemon, workspace)
    body = {"idempotency_key": "same", "message_id": "m0", **_fenced(fences)}
    answers = at_once(daemon.http_url, "POST", spath(session, "fork"), [body] * CLIENTS)
    assert sorted(status for status, _ in answers) == [200] * (CLIENTS - 1) + [201], answers
    assert len({document["session"]["id"] for _, document in answers}) == 1
    assert len(_children(api, session)) == 1


def test_twenty_identical_rewinds_cut_once_and_twenty_different_ones_cut_once(daemon, workspace):
    api, session, fences = _source(daemon, workspace, turns=3)
    body = {"message_id": "m2", "idempotency_key": "same", **_fenced(fences)}
    answers = at_once(daemon.http_url, "POST", spath(session, "rewind"), [body] * CLIENTS)
    assert all(status == 200 for status, _ in answers), answers
    replayed = sorted(document["rewind"]["replayed"] for _, document in answers)
    assert replayed == [False] + [True] * (CLIENTS - 1)
    assert len({document["rewind"]["archived_event_count"] for _, document in answers}) == 1
    read = api.call("GET", spath(session))[1]["session"]
    assert read["fences"]["epoch"] == 1
    # Different keys on the same fences: one cuts, every other is a stale fence.
    fences = read["fences"]
    bodies = [{"message_id": "m1", "idempotency_key": f"key{i}", **_fenced(fences)} for i in range(CLIENTS)]
    answers = at_once(daemon.http_url, "POST", spath(session, "rewind"), bodies)
    outcomes = sorted(str(document if status >= 400 else status) for status, document in answers)
    assert outcomes == ["200"] + ["session_fence_conflict"] * (CLIENTS - 1), answers
    assert api.call("GET", spath(session))[1]["session"]["fences"]["epoch"] == 2
    assert [m["text"] for m in api.call("GET", spath(session, "history"))[1]["messages"]] == ["turn 0",
                                                                                             "echo: turn 0"]
