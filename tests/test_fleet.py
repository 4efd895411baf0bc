"""A fleet (docs/fleet.md): real daemons on loopback, each with its own home, sharing one real PostgreSQL
server (tests/harness/postgres.py, the `postgres` fixture). Skipped, with the reason, where no PostgreSQL can be
started.

One list across nodes (HTTP, CLI and the page), the nodes and their load, an operation on another node's
session relayed to it (its answer byte for byte, a stream as it is written, a prompt, a rewind, a stop),
placement, the fleet secret refused (and a second node of one name kept out), a node killed with SIGKILL
flagged (list, nodes, inbox) and its session adopted from shared storage (its queued input, held request,
interrupted rewind and continues settled as a boot settles them, its checkpoints carried and its cut turn's end
checkpoint taken on the adopter), a node partitioned away (SIGSTOP)
fenced when it comes back after an adoption, and an outage of PostgreSQL caught up.
"""

import concurrent.futures
import contextlib
import http.client
import json
import os
import signal
import sqlite3
import time
import urllib.error
import urllib.request

import pytest

from compozy.config import ConfigError, load
from tests.harness.api import spath, wait_for
from tests.harness.cli import run_cli
from tests.harness.daemon import DaemonProcess
from tests.harness.sse import Viewer
from tests.harness.web import STICKING_OUT, VIEWPORTS, WAIT_MS, needs_browser

SECRET = "a-fleet-secret-of-some-length-0123456789"
NODE_HEADER, SECRET_HEADER = "X-Compozy-Fleet-Node", "X-Compozy-Fleet-Secret"
LAPSE = 5  # [fleet] unreachable_after in these tests (15 by default)


def secret_file(folder, text=SECRET, mode=0o600):
    path = folder / "fleet-secret"
    path.write_text(text + "\n")
    os.chmod(path, mode)
    return path


def write_config(home, text):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    os.chmod(home / "config.toml", 0o600)


def node_config(database, name, secret, top="", **extra):
    lines = [f'database = "{database}"', f'node = "{name}"', f'secret_file = "{secret}"',
             f"unreachable_after = {LAPSE}", *(f"{k} = {json.dumps(v)}" for k, v in extra.items())]
    return top + "[fleet]\n" + "\n".join(lines) + "\n"


def start_node(root, database, name, secret, top="", **extra):
    home = root / name
    write_config(home, node_config(database, name, secret, top, **extra))
    return DaemonProcess(home).start()


def call(daemon, method, path, body=None, headers=None, auth=True):
    """(status, headers, body bytes) of one request, whatever the status."""
    data = json.dumps(body).encode() if body is not None else None
    sent = {**(daemon.auth_headers if auth else {}), **({"Content-Type": "application/json"} if data else {}),
            **(headers or {})}
    request = urllib.request.Request(daemon.http_url + path, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


def document(daemon, method, path, body=None, **kwargs):
    status, _, data = call(daemon, method, path, body, **kwargs)
    return status, json.loads(data) if data else None


def fleet_page(daemon, **query):
    status, page = document(daemon, "GET", "/api/sessions?" + "&".join(f"{k}={v}" for k, v in
                                                                      {"scope": "fleet", **query}.items()))
    assert status == 200, page
    return page


def fleet_row(daemon, session_id):
    return next((s for s in fleet_page(daemon, archive="include")["sessions"] if s["id"] == session_id), None)


def run_turn_on(daemon, session, message):
    status, admitted = document(daemon, "POST", spath(session, "prompt"), {"message": message})
    assert status == 200, admitted
    turn = admitted["prompt"]["turn_id"]
    return wait_for(lambda: [e for e in document(daemon, "GET", spath(session, "events"))[1]["events"]
                             if e["turn_id"] == turn and e["type"] == "done"], what="the turn's end")


def create(daemon, workspace, **body):
    status, answer = document(daemon, "POST", "/api/sessions", {"workspace_path": str(workspace), **body})
    assert status == 201, answer
    return answer["session"]


# -- joining ------------------------------------------------------------------------------------------


def test_the_fleet_stanza_is_checked_and_the_secret_must_be_owner_only(tmp_path):
    home = tmp_path / "home"
    readable = secret_file(tmp_path, mode=0o640)
    write_config(home, node_config("postgresql://u@127.0.0.1:1/db", "alpha", readable))
    with pytest.raises(ConfigError) as refused:
        load(home / "config.toml")
    assert "fleet.secret_file" in str(refused.value) and "chmod 600" in str(refused.value)
    started = run_cli(home, "daemon", "run", "--http", "127.0.0.1:0", timeout=30)
    assert started.returncode != 0 and "fleet.secret_file" in started.stdout + started.stderr
    assert not (home / "daemon.json").exists()

    os.chmod(readable, 0o600)
    write_config(home, "[fleet]\ndatabase = \"mysql://x\"\nnode = \"a b\"\nsecret_file = \"relative\"\nspeed = 1\n")
    with pytest.raises(ConfigError) as refused:
        load(home / "config.toml")
    said = str(refused.value)
    for key in ("fleet.database", "fleet.node", "fleet.secret_file", "fleet.speed"):
        assert key in said, said

    # Listening on every address with no fleet.advertise: refused, not advertised as loopback.
    write_config(home, node_config("postgresql://u@127.0.0.1:1/db", "alpha", readable))
    started = run_cli(home, "daemon", "run", "--http", "0.0.0.0:0", "--allow-remote",
                      extra_env={"COMPOZY_TOKEN": "a-token-of-some-length-0123456789"}, timeout=30)
    said = started.stdout + started.stderr
    assert started.returncode != 0 and "fleet.advertise" in said and "0.0.0.0" in said, said
    assert not (home / "daemon.json").exists()

    os.environ["COMPOZY_TEST_FLEET_DB"] = "postgresql://u@127.0.0.1:1/db"
    try:
        write_config(home, f'[fleet]\ndatabase_env = "COMPOZY_TEST_FLEET_DB"\nnode = "alpha"\nsecret_file = "{readable}"\n')
        fleet = load(home / "config.toml").fleet
    finally:
        del os.environ["COMPOZY_TEST_FLEET_DB"]
    assert (fleet.node, fleet.database, fleet.secret) == ("alpha", "postgresql://u@127.0.0.1:1/db", SECRET)
    assert SECRET not in repr(fleet) and "127.0.0.1:1" not in repr(fleet)
    write_config(home, "")
    assert load(home / "config.toml").fleet is None


# -- one view, relayed operations, placement -----------------------------------------------------------


@pytest.fixture(scope="module")
def fleet(postgres, tmp_path_factory):
    """Two nodes: alpha (room for 1 agent) and beta (room for 6, holding edits for a person), each with a workspace
    named proj."""
    root = tmp_path_factory.mktemp("fleet")
    database, secret = postgres.new_database(), secret_file(root)
    nodes = {}
    try:
        for name, room in (("alpha", 1), ("beta", 6)):
            top = '[permissions]\nmode = "approve-reads"\n' if name == "beta" else ""
            nodes[name] = start_node(root, database, name, secret, top, max_agents=room)
            folder = root / f"{name}-proj"
            folder.mkdir()
            assert document(nodes[name], "POST", "/api/workspaces", {"name": "proj", "path": str(folder)})[0] == 201

        def served():
            listed = document(nodes["alpha"], "GET", "/api/nodes")[1]["nodes"]
            return {n["name"] for n in listed if "proj" in {w["name"] for w in n["workspaces"]}} == set(nodes)
        wait_for(served, what="both nodes' workspaces in the fleet catalog")
        yield nodes["alpha"], nodes["beta"], root
    finally:
        for node in nodes.values():
            node.stop()


def test_every_node_lists_the_fleets_sessions_and_nodes(fleet):
    alpha, beta, root = fleet
    on_beta = [create(beta, root / "beta-proj", name=f"beta-{i}") for i in range(3)]
    on_alpha = create(alpha, root / "alpha-proj", name="alpha-0")
    everyone = {s["id"] for s in on_beta} | {on_alpha["id"]}
    def listed():
        page = fleet_page(alpha)
        return page if everyone <= {s["id"] for s in page["sessions"]} else None
    page = wait_for(listed, what="every session in the fleet list")
    assert page["scope"] == "fleet"
    nodes = {s["id"]: s["node"] for s in page["sessions"]}
    assert {nodes[s["id"]]["name"] for s in on_beta} == {"beta"} and nodes[on_alpha["id"]]["name"] == "alpha"
    assert all(node["status"] == "up" for node in nodes.values())
    for query in ({}, {"archive": "include"}, {"workspace": "proj"}, {"archive": "only"}):  # totals, kept or counted
        full = fleet_page(alpha, limit=1000, **query)
        assert full["page"]["total"] == len(full["sessions"]) and not full["page"]["has_more"], query
    # The same filters and paging as the local list; a node's own list is unchanged.
    first = fleet_page(beta, workspace="proj", limit=2)
    assert first["page"]["has_more"] and len(first["sessions"]) == 2
    rest = fleet_page(beta, workspace="proj", limit=2, cursor=first["page"]["next_cursor"])
    seen = [s["id"] for s in first["sessions"] + rest["sessions"]]
    assert seen == sorted(seen, reverse=True) and everyone <= set(seen + [s["id"] for s in fleet_page(
        beta, workspace="proj", limit=1000)["sessions"]])
    status, refused = document(alpha, "GET", "/api/sessions?scope=fleet&workspace=no-such")
    assert (status, refused["code"]) == (404, "workspace_not_found")
    status, local = document(alpha, "GET", "/api/sessions")
    assert status == 200 and {s["id"] for s in local["sessions"]} == {on_alpha["id"]} and "node" not in local["sessions"][0]

    status, listed = document(alpha, "GET", "/api/nodes")
    assert status == 200
    nodes = {n["name"]: n for n in listed["nodes"]}
    assert set(nodes) >= {"alpha", "beta"} and nodes["alpha"]["this_node"] and not nodes["beta"]["this_node"]
    assert nodes["beta"]["status"] == "up" and nodes["beta"]["address"] == beta.http_url
    assert nodes["beta"]["capacity"]["max_agents"] == 6 and nodes["beta"]["capacity"]["free_memory"] > 0
    assert nodes["beta"]["heartbeat_age"] < LAPSE
    assert nodes["beta"]["workspaces"] == [{"name": "proj", "path": str(root / "beta-proj"), "shared_storage": False}]

    shown = run_cli(alpha.home, "session", "list", "--fleet")
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line for line in shown.stdout.splitlines()}
    assert " beta " in rows[on_beta[0]["id"]] and " alpha " in rows[on_alpha["id"]]
    shown = run_cli(alpha.home, "session", "get", on_beta[0]["id"][5:20], "-o", "json")  # a prefix, on beta
    assert shown.returncode == 0 and json.loads(shown.stdout)["session"]["name"] == "beta-0", shown.stderr
    shown = run_cli(beta.home, "nodes", "-o", "json")
    assert shown.returncode == 0 and {n["name"] for n in json.loads(shown.stdout)["nodes"]} >= {"alpha", "beta"}
    shown = run_cli(beta.home, "nodes")
    assert shown.returncode == 0 and "beta *" in shown.stdout and "up" in shown.stdout


def test_an_operation_on_another_nodes_session_is_relayed_to_it(fleet):
    alpha, beta, root = fleet
    session = create(beta, root / "beta-proj", name="relayed")
    wait_for(lambda: fleet_row(alpha, session["id"]), what="the session in the fleet catalog")
    # A prompt sent to alpha runs on beta; a stream opened on alpha carries beta's events as they come.
    viewer = Viewer(int(alpha.http_url.rsplit(":", 1)[1]), spath(session, "stream"))
    assert viewer.status == 200 and viewer.content_type.startswith("text/event-stream")
    status, admitted = document(alpha, "POST", spath(session, "prompt"), {"message": "hello from alpha"})
    assert status == 200 and admitted["prompt"]["disposition"] == "started"
    seen = []
    for frame in viewer.frames():
        seen.append(frame["event"])
        if frame["event"] == "done":
            break
    viewer.close()
    assert "user_message" in seen and "agent_message" in seen
    # The owner's answer, byte for byte: through alpha, or asked of beta itself.
    for path in (spath(session, "events"), spath(session, "history"), f"/api/sessions/{session['id']}/no-route"):
        relayed, direct = call(alpha, "GET", path), call(beta, "GET", path)
        assert relayed[0] == direct[0] and relayed[2] == direct[2], path
        assert relayed[1]["Content-Type"] == direct[1]["Content-Type"]
    # A prompt answered as an event stream is relayed as one.
    status, headers, body = call(alpha, "POST", spath(session, "prompt"), {"message": "again"},
                                 headers={"Accept": "text/event-stream"})
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    assert b"event: prompt" in body and b"event: done" in body
    # Errors are the owner's too; a session the fleet does not know is this node's to refuse.
    status, refused = document(alpha, "DELETE", spath(session, "prompt", "queue", "qent_01J9Z3K6Q4V8M2N5P7R9T1W3XY"))
    assert (status, refused["code"]) == (404, "queue_entry_not_found")
    status, refused = document(alpha, "GET", "/api/sessions/sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY")
    assert (status, refused["code"]) == (404, "session_not_found")
    # A rewind sent to alpha archives beta's transcript from the message on.
    status, read = document(alpha, "GET", f"/api/sessions/{session['id']}")
    fences = read["session"]["fences"]
    said = [e for e in document(alpha, "GET", spath(session, "events"))[1]["events"] if e["type"] == "user_message"]
    status, rewound = document(alpha, "POST", spath(session, "rewind"), {
        "message_id": said[-1]["content"]["message_id"], "idempotency_key": "rewind-through-alpha",
        "expected_epoch": fences["epoch"], "expected_generation": fences["generation"],
        "expected_max_sequence": fences["max_sequence"]})
    assert status == 200, rewound
    assert rewound["rewind"]["draft_text"] == "again"
    assert [e["content"]["text"] for e in document(beta, "GET", spath(session, "events"))[1]["events"]
            if e["type"] == "user_message"] == ["hello from alpha"]
    # A permission beta holds for a person is answered through alpha.
    status, admitted = document(alpha, "POST", spath(session, "prompt"), {"message": "[permission edit] go"})
    turn = admitted["prompt"]["turn_id"]
    asked = wait_for(lambda: [e for e in document(alpha, "GET", spath(session, "events"))[1]["events"]
                              if e["turn_id"] == turn and e["type"] == "permission"], what="the held permission")
    status, approved = document(alpha, "POST", spath(session, "approve"),
                                {"request_id": asked[0]["content"]["request_id"], "decision": "allow-once"})
    assert status == 200 and approved["permission"]["status"] == "approved", approved
    said = wait_for(lambda: [e for e in document(beta, "GET", spath(session, "events"))[1]["events"]
                             if e["turn_id"] == turn and e["type"] == "done"] and
                    document(beta, "GET", spath(session, "history"))[1], what="the turn's end")
    assert "permission granted" in json.dumps(said)
    # The relay still needs the client's credentials on alpha.
    assert call(alpha, "GET", spath(session, "events"), auth=False)[0] == 401
    status, stopped = document(alpha, "POST", spath(session, "stop"), {"wait": True})
    assert status == 200 and stopped["state"] == "stopped" and stopped["verified"]
    assert document(beta, "GET", f"/api/sessions/{session['id']}")[1]["session"]["state"] == "stopped"


def test_the_fleet_secret_is_refused_unless_it_is_right_and_from_a_known_node(fleet):
    alpha, beta, root = fleet
    session = create(beta, root / "beta-proj", name="guarded")
    path = spath(session, "events")
    for headers in ({NODE_HEADER: "alpha", SECRET_HEADER: "wrong" * 8}, {NODE_HEADER: "mallory", SECRET_HEADER: SECRET},
                    {NODE_HEADER: "beta", SECRET_HEADER: SECRET}, {SECRET_HEADER: SECRET}):
        status, refused = document(beta, "GET", path, headers=headers, auth=False)
        assert (status, refused["code"]) == (403, "fleet_secret_refused"), headers
        assert SECRET not in json.dumps(refused)
    status, answer = document(beta, "GET", path, headers={NODE_HEADER: "alpha", SECRET_HEADER: SECRET}, auth=False)
    assert status == 200 and answer["events"] == []

    # A second daemon that calls itself beta while beta is up does not join: the fleet keeps one beta.
    twin_home = root / "twin"
    write_config(twin_home, (beta.home / "config.toml").read_text())
    twin = DaemonProcess(twin_home).start()
    try:
        wait_for(lambda: "cannot join the fleet catalog" in twin.output(), what="the twin refused")
        assert "is up at " + beta.http_url in twin.output()
        nodes = {n["name"]: n["address"] for n in document(alpha, "GET", "/api/nodes")[1]["nodes"]}
        assert nodes["beta"] == beta.http_url
    finally:
        twin.stop()
    assert {n["name"]: n["status"] for n in document(alpha, "GET", "/api/nodes")[1]["nodes"]}["beta"] == "up"
    # A reload with the same [fleet] says nothing; a changed one waits for a restart, and the log says so.
    assert run_cli(beta.home, "daemon", "reload").returncode == 0
    assert "[fleet] in config.toml changed" not in beta.output()
    write_config(beta.home, (beta.home / "config.toml").read_text().replace("max_agents = 6", "max_agents = 7"))
    assert run_cli(beta.home, "daemon", "reload").returncode == 0
    wait_for(lambda: "[fleet] in config.toml changed" in beta.output(), what="the reload's warning")
    write_config(beta.home, (beta.home / "config.toml").read_text().replace("max_agents = 7", "max_agents = 6"))


def test_a_new_session_is_placed_where_there_is_room_or_where_asked(fleet):
    alpha, beta, root = fleet

    def placed(daemon, **body):
        status, answer = document(daemon, "POST", "/api/sessions", {"workspace": "proj", **body})
        return answer["session"] if status == 201 else None
    # auto: beta has more free room (6 agents to alpha's 1) and holds a workspace named proj.
    auto = wait_for(lambda: placed(alpha, node="auto", name="auto"), what="a placement")
    assert auto["cwd"] == str(root / "beta-proj")
    status, local = document(beta, "GET", "/api/sessions?limit=1000")
    assert auto["id"] in {s["id"] for s in local["sessions"]}
    explicit = placed(beta, node="alpha", name="explicit")
    assert explicit["cwd"] == str(root / "alpha-proj")
    assert placed(alpha, node="alpha", name="here")["cwd"] == str(root / "alpha-proj")
    status, refused = document(alpha, "POST", "/api/sessions", {"workspace": "proj", "node": "nowhere"})
    assert (status, refused["code"], refused["details"]["node"]) == (404, "node_not_found", "nowhere")
    status, refused = document(alpha, "POST", "/api/sessions", {"workspace": "elsewhere", "node": "auto"})
    assert (status, refused["code"]) == (404, "workspace_not_found")
    status, refused = document(alpha, "POST", "/api/sessions", {"workspace": "proj", "node": "beta", "color": "red"})
    assert (status, refused["code"]) == (400, "invalid_request")  # refused as the view refuses it, placed nowhere


# -- failures -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def gamma_and_alpha_sharing_work(postgres, tmp_path, gamma_config=""):
    """alpha and gamma in a new fleet, gamma holding the workspace `work` on shared storage, alpha knowing it by
    the same name (so alpha can adopt gamma's sessions of it); both stopped at the end."""
    database, secret = postgres.new_database(), secret_file(tmp_path)
    alpha = start_node(tmp_path, database, "alpha", secret)
    gamma = start_node(tmp_path, database, "gamma", secret, gamma_config, shared_storage=["work"])
    workspace = tmp_path / "work"
    workspace.mkdir()
    try:
        assert document(alpha, "POST", "/api/workspaces", {"name": "work", "path": str(workspace)})[0] == 201
        yield alpha, gamma, workspace
    finally:
        alpha.stop()
        gamma.stop()


def test_a_killed_node_is_flagged_and_an_outage_of_the_catalog_is_caught_up(postgres, tmp_path):
    database, secret = postgres.new_database(), secret_file(tmp_path)
    alpha = start_node(tmp_path, database, "alpha", secret)
    gamma = start_node(tmp_path, database, "gamma", secret, shared_storage=["work"])
    try:
        workspace = tmp_path / "work"
        workspace.mkdir()
        doomed = create(gamma, workspace, name="doomed")
        kept = create(alpha, workspace, name="kept")
        status, admitted = document(gamma, "POST", spath(doomed, "prompt"), {"message": "remember this"})
        assert status == 200
        wait_for(lambda: any(e["type"] == "done" for e in document(gamma, "GET", spath(doomed, "events"))[1]["events"]),
                 what="gamma's turn")
        before = document(gamma, "GET", spath(doomed, "events"))[1]["events"]
        status, refused = document(alpha, "POST", f"/api/sessions/{doomed['id']}/adopt")
        assert (status, refused["code"], refused["details"]["reason"]) == (409, "session_not_adoptable", "node_up")
        wait_for(lambda: fleet_row(alpha, doomed["id"]), what="gamma's session in the fleet list")
        gamma.kill()
        row = wait_for(lambda: (r := fleet_row(alpha, doomed["id"]))["node"]["status"] == "node_unreachable" and r,
                       timeout=LAPSE + 10, what="gamma's session flagged")
        assert row["node"] == {"name": "gamma", "status": "node_unreachable"}
        status, refused = document(alpha, "GET", spath(doomed, "events"))
        assert (status, refused["code"], refused["details"]["node"]) == (503, "node_unreachable", "gamma")
        nodes = {n["name"]: n["status"] for n in document(alpha, "GET", "/api/nodes")[1]["nodes"]}
        assert nodes == {"alpha": "up", "gamma": "unreachable"}
        item = wait_for(lambda: document(alpha, "GET", "/api/attention?kind=node_unreachable")[1]["items"],
                        what="the inbox item")[0]
        assert item["details"]["node"] == "gamma" and item["details"]["sessions"] == 1 and "gamma" in item["summary"]

        # alpha adopts it from shared storage: a new lease, its history whole, the same repair a boot runs.
        status, adopted = document(alpha, "POST", f"/api/sessions/{doomed['id']}/adopt")
        assert status == 200, adopted
        assert adopted["adoption"] == {"from_node": "gamma", "lease_token": 1}
        assert adopted["session"]["state"] == "stopped" and adopted["session"]["cwd"] == str(workspace)
        after = document(alpha, "GET", spath(adopted["session"], "events"))[1]["events"]
        assert [(e["sequence"], e["type"]) for e in after[:len(before)]] == [(e["sequence"], e["type"]) for e in before]
        assert not (tmp_path / "gamma" / "sessions" / doomed["id"]).exists()
        turns = document(alpha, "GET", spath(adopted["session"], "usage"))[1]["usage"]["turns"]
        assert [t["turn_id"] for t in turns] == [admitted["prompt"]["turn_id"]]  # its usage ledger rows, from its events
        status, refused = document(alpha, "POST", f"/api/sessions/{doomed['id']}/adopt")
        assert (status, refused["details"]["reason"]) == (409, "already_here")
        wait_for(lambda: fleet_row(alpha, doomed["id"])["node"] == {"name": "alpha", "status": "up"},
                 what="the fleet list names the adopter")
        assert run_turn_on(alpha, adopted["session"], "still here?")
        full = fleet_page(alpha, limit=1000)
        assert full["page"]["total"] == len(full["sessions"]) == 2

        # PostgreSQL goes away: the node works on, refuses only what needs the fleet, and catches up after.
        postgres.stop()
        try:
            status, renamed = document(alpha, "PATCH", spath(kept), {"name": "renamed-in-outage"})
            assert status == 200, renamed
            during = create(alpha, workspace, name="made-in-outage")
            status, refused = document(alpha, "GET", "/api/sessions?scope=fleet")
            assert (status, refused["code"]) == (503, "fleet_catalog_unavailable")
        finally:
            postgres.start()
        wait_for(lambda: (r := fleet_row(alpha, kept["id"])) and r["name"] == "renamed-in-outage",
                 timeout=20, what="the rename mirrored after the outage")
        assert fleet_row(alpha, during["id"])["name"] == "made-in-outage"
        # gamma comes back: it no longer holds the adopted session (any request for it goes to alpha), its item
        # resolves. A node that stops says so; its sessions stay listed, unreachable.
        gamma.start()
        wait_for(lambda: not document(alpha, "GET", "/api/attention?kind=node_unreachable")[1]["items"],
                 what="the inbox item resolved")
        status, local = document(gamma, "GET", "/api/sessions")
        assert doomed["id"] not in {s["id"] for s in local["sessions"]}
        relayed, direct = call(gamma, "GET", spath(adopted["session"], "history")), \
            call(alpha, "GET", spath(adopted["session"], "history"))
        assert relayed[0] == 200 and relayed[2] == direct[2], relayed[2][:300]
        alpha.stop()
        nodes = {n["name"]: n["status"] for n in document(gamma, "GET", "/api/nodes")[1]["nodes"]}
        assert nodes == {"alpha": "stopped", "gamma": "up"}
        row = fleet_row(gamma, doomed["id"])  # as it was when alpha stopped it on its way out
        assert row["node"]["status"] == "node_unreachable" and row["state"] == "stopped"
        assert row["stop_reason"] == "shutdown"
    finally:
        alpha.stop()
        gamma.stop()



@contextlib.contextmanager
def a_session_of_gamma_seen_by_alpha(postgres, tmp_path, name, **alpha_config):
    """alpha and gamma in a new fleet, a session made on gamma in alpha's fleet list; both stopped at the end."""
    database, secret = postgres.new_database(), secret_file(tmp_path)
    alpha = start_node(tmp_path, database, "alpha", secret, **alpha_config)
    gamma = start_node(tmp_path, database, "gamma", secret)
    workspace = tmp_path / "work"
    workspace.mkdir()
    try:
        session = create(gamma, workspace, name=name)
        wait_for(lambda: fleet_row(alpha, session["id"]), what="the session in the fleet list")
        yield alpha, gamma, session
    finally:
        alpha.stop()
        gamma.stop()


@contextlib.contextmanager
def frozen(daemon):
    """The daemon stopped (SIGSTOP: its connections stay open, nothing answers), woken at the end."""
    os.kill(daemon.process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(daemon.process.pid, signal.SIGCONT)


def test_a_relayed_request_to_a_node_that_stopped_answering_is_answered_503(postgres, tmp_path):
    """gamma freezes before its heartbeat lapses: a request alpha relays to it is answered 503 node_unreachable
    after alpha's fleet.relay_timeout, not held for ever."""
    with a_session_of_gamma_seen_by_alpha(postgres, tmp_path, "frozen", relay_timeout=1) as (alpha, gamma, session):
        assert document(alpha, "GET", spath(session, "history"))[0] == 200  # relayed while gamma answers
        with frozen(gamma):
            status, refused = document(alpha, "GET", spath(session, "history"))
        assert (status, refused["code"], refused["details"]["node"]) == (503, "node_unreachable", "gamma"), refused
        assert "did not answer in 1 s" in refused["error"]


@pytest.mark.skipif(os.environ.get("COMPOZY_LONG") != "1", reason="a minute of waiting: COMPOZY_LONG=1 runs it")
def test_a_relayed_stream_from_a_node_that_froze_ends_after_three_keepalives(postgres, tmp_path):
    """gamma freezes while alpha relays one of its session's streams: the stream hears nothing, not even a
    keepalive, and alpha ends it after STREAM_QUIET_SECONDS (three keepalives) instead of holding its thread."""
    from compozy.fleet.relay import STREAM_QUIET_SECONDS
    with a_session_of_gamma_seen_by_alpha(postgres, tmp_path, "frozen stream") as (alpha, gamma, session):
        viewer = Viewer(int(alpha.http_url.rsplit(":", 1)[1]), spath(session, "stream"),
                        timeout=STREAM_QUIET_SECONDS + 60)
        assert viewer.status == 200
        with frozen(gamma), contextlib.closing(viewer):
            began = time.monotonic()
            with contextlib.suppress(OSError, http.client.HTTPException):
                for _ in viewer.frames():
                    pass
            ended = time.monotonic() - began
        assert STREAM_QUIET_SECONDS - 1 <= ended < STREAM_QUIET_SECONDS + 30, ended
        assert document(alpha, "GET", "/api/health")[0] == 200  # alpha itself kept answering


def test_a_partitioned_node_that_comes_back_after_an_adoption_is_fenced(postgres, tmp_path):
    """gamma freezes (SIGSTOP: its heartbeat stops, its process and agent stay), alpha adopts its session, gamma
    wakes up holding a stale claim: it stops serving the session, and a prompt sent to it runs on alpha."""
    database, secret = postgres.new_database(), secret_file(tmp_path)
    alpha = start_node(tmp_path, database, "alpha", secret)
    gamma = start_node(tmp_path, database, "gamma", secret, shared_storage=["work"])
    workspace = tmp_path / "work"
    workspace.mkdir()
    try:
        session = create(gamma, workspace, name="contested")
        assert document(alpha, "POST", "/api/workspaces", {"name": "work", "path": str(workspace)})[0] == 201
        run_turn_on(gamma, session, "first, on gamma")
        wait_for(lambda: fleet_row(alpha, session["id"]), what="the session in the fleet list")
        with frozen(gamma):
            wait_for(lambda: fleet_row(alpha, session["id"])["node"]["status"] == "node_unreachable",
                     timeout=LAPSE + 10, what="gamma unreachable")
            status, adopted = document(alpha, "POST", f"/api/sessions/{session['id']}/adopt")
            assert status == 200 and adopted["adoption"]["lease_token"] == 1, adopted
        wait_for(lambda: session["id"] not in {s["id"] for s in document(gamma, "GET", "/api/sessions")[1]["sessions"]},
                 what="gamma fenced the session")
        moved = adopted["session"]
        status, admitted = document(gamma, "POST", spath(moved, "prompt"), {"message": "second, sent to gamma"})
        assert status == 200, admitted
        turn = admitted["prompt"]["turn_id"]
        wait_for(lambda: any(e["turn_id"] == turn and e["type"] == "done"
                             for e in document(alpha, "GET", spath(moved, "events"))[1]["events"]),
                 what="the prompt sent to gamma ran on alpha")
        assert "was adopted by node alpha" in gamma.output()
        assert fleet_row(gamma, session["id"])["node"] == {"name": "alpha", "status": "up"}
        # Had the catalog lost the adoption's commit, alpha would say so when it joins again (and never steal the
        # row back on its own).
        import psycopg
        with psycopg.connect(database, autocommit=True) as connection:
            connection.execute("UPDATE fleet_sessions SET node = 'gamma' WHERE id = %s", (session["id"],))
        alpha.restart()
        wait_for(lambda: f"session {session['id']} is held here but the fleet catalog names node gamma"
                 in alpha.output(), what="alpha's complaint")
    finally:
        alpha.stop()
        gamma.stop()


def test_an_adopted_session_keeps_its_queued_input_and_its_held_request_is_orphaned(postgres, tmp_path):
    """gamma holds a permission for a person mid-turn and has a prompt queued behind it (acknowledged: 202) when it
    is killed with SIGKILL. alpha adopts the session: the queued input is there, runs on alpha after the next
    prompt's turn, exactly once (a retry of it answers the same entry); the held request is orphaned, as a boot
    orphans its own after a crash."""
    approve_reads = '[permissions]\nmode = "approve-reads"\n'
    with gamma_and_alpha_sharing_work(postgres, tmp_path, approve_reads) as (alpha, gamma, workspace):
        session = create(gamma, workspace, name="busy when killed")
        status, admitted = document(gamma, "POST", spath(session, "prompt"), {"message": "[permission edit] go"})
        assert status == 200, admitted
        held = wait_for(lambda: [e for e in document(gamma, "GET", spath(session, "events"))[1]["events"]
                                 if e["type"] == "permission"], what="the held permission")[0]
        queued_prompt = {"message": "run me later", "mode": "queue", "message_id": "mq", "idempotency_key": "kq"}
        status, queued = document(gamma, "POST", spath(session, "prompt"), queued_prompt)
        assert status == 202 and queued["prompt"]["disposition"] == "queued", queued
        entry = queued["prompt"]["entry_id"]
        wait_for(lambda: (r := fleet_row(alpha, session["id"])) and r["state"] == "active",
                 what="the session in the fleet list")
        gamma.kill()
        wait_for(lambda: fleet_row(alpha, session["id"])["node"]["status"] == "node_unreachable",
                 timeout=LAPSE + 10, what="gamma unreachable")

        # Its node's catalog unreadable: refused, nothing moved (the queue is never dropped silently).
        os.rename(tmp_path / "gamma" / "compozy.db", tmp_path / "gamma" / "compozy.db.away")
        try:
            status, refused = document(alpha, "POST", f"/api/sessions/{session['id']}/adopt")
        finally:
            os.rename(tmp_path / "gamma" / "compozy.db.away", tmp_path / "gamma" / "compozy.db")
        assert (status, refused["details"]["reason"]) == (409, "catalog_unreachable"), refused
        assert (tmp_path / "gamma" / "sessions" / session["id"] / "meta.json").exists()
        assert not (alpha.home / "sessions" / session["id"]).exists()

        status, adopted = document(alpha, "POST", f"/api/sessions/{session['id']}/adopt")
        assert status == 200, adopted
        moved = adopted["session"]  # in alpha's workspace of the same name
        items = document(alpha, "GET", f"/api/attention?session_id={session['id']}")[1]["items"]
        assert [i["kind"] for i in items] == ["agent_failure"], items  # as a boot opens it for a session found crashed
        assert adopted["session"]["state"] == "stopped" and adopted["session"]["stop_reason"] == "agent_crashed"
        status, inputs = document(alpha, "GET", spath(moved, "prompt", "queue"))
        assert status == 200, inputs
        assert [(e["id"], e["status"], e["message"]) for e in inputs["entries"]] == [(entry, "queued", "run me later")]
        status, inspected = document(alpha, "GET", spath(moved, "inspect"))
        assert status == 200, inspected
        assert [i["request_id"] for i in inspected["pending_interactions"]] == []  # none left pending
        status, refused = document(alpha, "POST", spath(moved, "approve"),
                                   {"request_id": held["content"]["request_id"], "decision": "allow-once"})
        assert (status, refused["code"]) == (404, "permission_request_not_found"), refused
        with sqlite3.connect(alpha.home / "compozy.db") as catalog:  # carried, then orphaned as a boot orphans it
            rows = catalog.execute("SELECT id, status FROM pending_interactions WHERE session_id = ?",
                                   (session["id"],)).fetchall()
        assert rows == [(held["content"]["request_id"], "orphaned")]
        # The retry of the acknowledged prompt answers the same entry, on the adopter, and queues nothing new.
        status, again = document(alpha, "POST", spath(moved, "prompt"), queued_prompt)
        assert status == 202 and again["prompt"]["entry_id"] == entry and again["prompt"]["replayed"], again
        # A prompt restarts the session on alpha; the queued input runs after its turn, once.
        status, started = document(alpha, "POST", spath(moved, "prompt"), {"message": "back on alpha"})
        assert status == 200 and started["prompt"]["disposition"] == "started", started
        ran = wait_for(lambda: [e for e in document(alpha, "GET", spath(moved, "events"))[1]["events"]
                                if e["turn_id"] == queued["prompt"]["turn_id"] and e["type"] == "done"],
                       what="the queued input's turn on alpha")
        assert ran
        said = [e["content"]["text"] for e in document(alpha, "GET", spath(moved, "events"))[1]["events"]
                if e["type"] == "user_message"]
        assert said == ["[permission edit] go", "back on alpha", "run me later"]
        assert document(alpha, "GET", spath(moved, "prompt", "queue"))[1]["entries"] == []


def test_an_adoption_cut_short_is_resumed_and_concurrent_ones_are_one(postgres, tmp_path):
    """An adoption that fails after it took the lease (here its folder cannot be put in place) leaves the old
    node's folder and its queued input where they were; a retry resumes it rather than refusing it as this
    node's already. Adoptions asked at once (a CLI retry) are one: one answers the session, the others 409."""
    with gamma_and_alpha_sharing_work(postgres, tmp_path) as (alpha, gamma, workspace):
        session = create(gamma, workspace, name="moved twice over")
        queued_prompt = {"message": "wait for me", "mode": "queue", "message_id": "mq", "idempotency_key": "kq"}
        assert document(gamma, "POST", spath(session, "prompt"), {"message": "[sleep 30] long"})[0] == 200
        status, queued = document(gamma, "POST", spath(session, "prompt"), queued_prompt)
        assert status == 202, queued
        wait_for(lambda: (r := fleet_row(alpha, session["id"])) and r["state"] == "active",
                 what="the session in the fleet list")
        gamma.kill()
        wait_for(lambda: fleet_row(alpha, session["id"])["node"]["status"] == "node_unreachable",
                 timeout=LAPSE + 10, what="gamma unreachable")
        in_the_way = alpha.home / "sessions" / session["id"]
        in_the_way.parent.mkdir(parents=True, exist_ok=True)
        in_the_way.write_text("not a folder")  # the folder cannot be put in place: the attempt fails mid-way
        status, failed = document(alpha, "POST", f"/api/sessions/{session['id']}/adopt")
        assert status >= 500, failed
        assert (tmp_path / "gamma" / "sessions" / session["id"] / "meta.json").exists()  # the old copy stays
        in_the_way.unlink()
        alpha.restart()  # as after the adopter crashed there: the lease is alpha's, the session on no node

        answers = []
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            for answer in pool.map(lambda _: document(alpha, "POST", f"/api/sessions/{session['id']}/adopt"),
                                   range(3)):
                answers.append(answer)
        done = [a for s, a in answers if s == 200]
        assert len(done) == 1 and done[0]["adoption"] == {"from_node": "gamma", "lease_token": 1}, answers
        assert all((s, a["details"]["reason"]) in ((409, "already_here"), (409, "in_progress"))
                   for s, a in answers if s != 200), answers
        moved = done[0]["session"]
        assert not (tmp_path / "gamma" / "sessions" / session["id"]).exists()
        entries = document(alpha, "GET", spath(moved, "prompt", "queue"))[1]["entries"]
        assert [(e["id"], e["message"]) for e in entries] == [(queued["prompt"]["entry_id"], "wait for me")]
        assert list((alpha.home / "adopting").iterdir()) == []  # no staging folder or note left behind


def test_an_adopted_session_s_interrupted_rewind_and_continue_are_settled_as_a_boot_settles_them(postgres, tmp_path):
    """gamma is killed in the middle of a rewind (its cut made, its receipt still pending) and of two continues of
    the session (one whose new session was written whole, one cut short while its folder was being made). alpha
    adopts the session and settles them as gamma's own boot would have: the rewind finished, the whole continue
    standing, the cut one withdrawn. Retries with the same keys on alpha answer what gamma answered."""
    with gamma_and_alpha_sharing_work(postgres, tmp_path) as (alpha, gamma, workspace):
        session = create(gamma, workspace, name="rewound when killed")
        run_turn_on(gamma, session, "first")
        run_turn_on(gamma, session, "second")
        said = [e for e in document(gamma, "GET", spath(session, "events"))[1]["events"] if e["type"] == "user_message"]
        fences = document(gamma, "GET", f"/api/sessions/{session['id']}")[1]["session"]["fences"]
        rewind = {"message_id": said[-1]["content"]["message_id"], "idempotency_key": "r1",
                  "expected_epoch": fences["epoch"], "expected_generation": fences["generation"],
                  "expected_max_sequence": fences["max_sequence"]}
        status, rewound = document(gamma, "POST", spath(session, "rewind"), rewind)
        assert status == 200 and rewound["rewind"]["draft_text"] == "second", rewound
        proceed = {"agent_name": "general", "idempotency_key": "c1"}
        status, continued = document(gamma, "POST", spath(session, "continue"), proceed)
        assert status == 201, continued
        child = continued["session"]
        wait_for(lambda: fleet_row(alpha, session["id"]) and fleet_row(alpha, child["id"]),
                 what="both sessions in the fleet list")
        gamma.kill()
        wait_for(lambda: fleet_row(alpha, session["id"])["node"]["status"] == "node_unreachable",
                 timeout=LAPSE + 10, what="gamma unreachable")
        cut_short = "sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY"
        (tmp_path / "gamma" / "sessions" / cut_short).mkdir()  # its folder begun, never written
        with sqlite3.connect(tmp_path / "gamma" / "compozy.db") as catalog:  # as the kill left them
            catalog.execute("UPDATE rewind_receipts SET state = 'pending' WHERE idempotency_key = 'r1'")
            catalog.execute("UPDATE derivations SET state = 'creating', result = NULL WHERE idempotency_key = 'c1'")
            catalog.execute("INSERT INTO derivations SELECT workspace_id, 'c2', fingerprint, kind, source_session_id, "
                            "?, 'creating', NULL, created_at, updated_at FROM derivations WHERE idempotency_key = 'c1'",
                            (cut_short,))

        status, adopted = document(alpha, "POST", f"/api/sessions/{session['id']}/adopt")
        assert status == 200, adopted
        moved = adopted["session"]
        with sqlite3.connect(alpha.home / "compozy.db") as catalog:
            receipts = catalog.execute("SELECT idempotency_key, state FROM rewind_receipts WHERE session_id = ?",
                                       (session["id"],)).fetchall()
            derivations = catalog.execute("SELECT idempotency_key, workspace_id, state, child_session_id "
                                          "FROM derivations WHERE source_session_id = ?", (session["id"],)).fetchall()
        assert receipts == [("r1", "completed")]
        assert derivations == [("c1", moved["workspace_id"], "created", child["id"])]  # c2 withdrawn
        # The rewind retried on alpha answers gamma's answer, replayed; its transcript stays cut.
        status, again = document(alpha, "POST", spath(moved, "rewind"), rewind)
        assert status == 200 and again["rewind"] == {**rewound["rewind"], "replayed": True}, again
        assert [e["content"]["text"] for e in document(alpha, "GET", spath(moved, "events"))[1]["events"]
                if e["type"] == "user_message"] == ["first"]
        # The continue's new session is adopted in turn: the retry answers it, and creates nothing new.
        status, taken = document(alpha, "POST", f"/api/sessions/{child['id']}/adopt")
        assert status == 200, taken
        status, replayed = document(alpha, "POST", spath(moved, "continue"), proceed)
        assert status == 200 and replayed["replayed"] and replayed["session"]["id"] == child["id"], replayed
        assert replayed["derivation"] == continued["derivation"]
        # The continue cut short never stood: its key makes one now, on alpha.
        status, made = document(alpha, "POST", spath(moved, "continue"), {**proceed, "idempotency_key": "c2"})
        assert status == 201 and made["session"]["id"] != cut_short, made
        wait_for(lambda: {s["id"] for s in fleet_page(alpha, limit=1000)["sessions"]}
                 == {session["id"], child["id"], made["session"]["id"]},
                 what="the three sessions in the fleet list (the mirror writes a new one's row after it is made)")


def test_an_adopted_session_s_checkpoints_come_along_and_its_cut_turn_gets_its_end_checkpoint(postgres, tmp_path):
    """gamma is killed in the middle of a turn that changed a file. The shadow repository of the workspace lives in
    gamma's home: alpha carries the session's checkpoints into its own, so they list, diff and restore on alpha,
    and the turn the kill cut gets its end checkpoint there, as a boot's repair takes it."""
    with gamma_and_alpha_sharing_work(postgres, tmp_path) as (alpha, gamma, workspace):
        session = create(gamma, workspace, name="cut mid-turn")
        first = run_turn_on(gamma, session, "[put a.txt one] first")[0]["turn_id"]
        status, admitted = document(gamma, "POST", spath(session, "prompt"),
                                    {"message": "[put b.txt two] [hold g1] cut"})
        assert status == 200, admitted
        cut = admitted["prompt"]["turn_id"]
        wait_for(lambda: [e for e in document(gamma, "GET", spath(session, "events"))[1]["events"]
                          if e["turn_id"] == cut and e["type"] == "agent_message"
                          and "holding g1" in e["content"]["text"]], what="the held turn")
        taken = document(gamma, "GET", spath(session, "checkpoints"))[1]["checkpoints"]
        assert [(c["turn_id"], c["kind"]) for c in taken] == [(first, "start"), (first, "end"), (cut, "start")]
        wait_for(lambda: fleet_row(alpha, session["id"]), what="the session in the fleet list")
        gamma.kill()
        wait_for(lambda: fleet_row(alpha, session["id"])["node"]["status"] == "node_unreachable",
                 timeout=LAPSE + 10, what="gamma unreachable")
        (workspace / "c.txt").write_text("written while gamma was down\n")

        status, adopted = document(alpha, "POST", f"/api/sessions/{session['id']}/adopt")
        assert status == 200, adopted
        moved = adopted["session"]
        listed = document(alpha, "GET", spath(moved, "checkpoints"))[1]["checkpoints"]
        assert [c["checkpoint_id"] for c in listed[:3]] == [c["checkpoint_id"] for c in taken]
        end = listed[3]  # the cut turn's end, taken by the adopter's repair: the folder as it is now
        assert (end["turn_id"], end["kind"], end["status"], end["repaired"]) == (cut, "end", "taken", True), end
        assert sorted(f["path"] for f in end["files"]) == ["b.txt", "c.txt"]
        status, diff = document(alpha, "GET", spath(moved, "turns", first, "diff"))
        assert status == 200, diff
        assert [(f["path"], f["status"]) for f in diff["diff"]["files"]] == [("a.txt", "added")]
        status, diff = document(alpha, "GET", spath(moved, "turns", cut, "diff"))
        assert status == 200 and diff["diff"]["against"] == "end", diff
        assert sorted(f["path"] for f in diff["diff"]["files"]) == ["b.txt", "c.txt"]
        with sqlite3.connect(alpha.home / "compozy.db") as catalog:
            (workspace_id,) = catalog.execute("SELECT id FROM workspaces WHERE name = 'work'").fetchone()
        refs = alpha.home / "checkpoints" / workspace_id / "refs" / "compozy" / session["id"]
        assert {p.name for p in refs.iterdir()} >= {c["checkpoint_id"] for c in taken}
        # A restore on alpha puts the folder back to the start of the first turn.
        status, restored = document(alpha, "POST", spath(moved, "checkpoints", taken[0]["checkpoint_id"], "restore"),
                                    {})
        assert status == 200, restored
        assert sorted(p.name for p in workspace.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="hands gamma's shadow repository to another user (chown)")
def test_checkpoints_left_behind_by_an_adoption_say_so_and_not_gc(postgres, tmp_path):
    """gamma's shadow repository belongs to another user by the time alpha adopts (git refuses it as
    safe.directory): the adoption goes on, and a diff that needs a tree left behind says so, naming the node,
    instead of blaming gc (reason not_carried, not pruned)."""
    with gamma_and_alpha_sharing_work(postgres, tmp_path) as (alpha, gamma, workspace):
        session = create(gamma, workspace, name="left behind")
        first = run_turn_on(gamma, session, "[put a.txt one] first")[0]["turn_id"]
        wait_for(lambda: fleet_row(alpha, session["id"]), what="the session in the fleet list")
        gamma.kill()
        wait_for(lambda: fleet_row(alpha, session["id"])["node"]["status"] == "node_unreachable",
                 timeout=LAPSE + 10, what="gamma unreachable")
        for folder in (gamma.home / "checkpoints").iterdir():
            for path in [folder, *folder.rglob("*")]:
                os.chown(path, 54321, 54321, follow_symlinks=False)
        status, adopted = document(alpha, "POST", f"/api/sessions/{session['id']}/adopt")
        assert status == 200, adopted
        moved = adopted["session"]
        assert len(document(alpha, "GET", spath(moved, "checkpoints"))[1]["checkpoints"]) == 2  # still listed
        status, refused = document(alpha, "GET", spath(moved, "turns", first, "diff"))
        assert status == 404 and refused["code"] == "checkpoint_not_found", refused
        assert refused["details"]["reason"] == "not_carried", refused
        assert "node gamma" in refused["error"] and "gc" not in refused["error"], refused


@needs_browser
@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_the_pages_list_shows_the_fleet_with_a_node_column(fleet, chromium, viewport):
    from playwright.sync_api import expect
    alpha, beta, root = fleet
    session = create(beta, root / "beta-proj", name=f"seen from alpha ({viewport})")
    wait_for(lambda: fleet_row(alpha, session["id"]), what="the session in the fleet list")
    context = chromium.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(alpha.page_url("/"))
        row = page.locator(f'tr[data-session-id="{session["id"]}"]')
        expect(row).to_have_count(0)  # this node's list by default
        page.locator("#filter-scope").select_option("fleet")  # shown because this node is in a fleet
        expect(row.locator("td.node")).to_have_text("beta")
        if viewport == "desktop":
            expect(page.locator("#node-column")).to_be_visible()
        assert page.evaluate(STICKING_OUT) == []
        row.locator("a.name").click()  # the session's own view, through alpha: every read relayed to beta
        expect(page.locator("#session-name")).to_contain_text(f"seen from alpha ({viewport})")
    finally:
        context.close()
    assert errors == []
