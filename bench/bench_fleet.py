"""The fleet's costs (issue 27; docs/fleet.md), measured against baselines taken in the same run, never asserted.

Budgets: the relay adds at most 2 ms to a request (a session's status asked of its owner directly against the
same request sent to another node, a new connection each, as the CLI connects) and at most 5 ms to a streamed
event's latency (one stream of a session read from its owner and one relayed by another node, both open
while turns run: each event's arrival on the relayed stream minus its arrival on the direct one); a fleet list
over 100,000 sessions on 10 nodes answers its default page in at most 20 ms (`GET /api/sessions?scope=fleet`
over HTTP, against `GET /api/health` on the same daemon as the HTTP floor).

Real daemons and a real PostgreSQL server (tests/harness/postgres.py); skipped where none can be started.
"""

import http.client
import json
import os
import statistics
import threading
import time

import pytest

from compozy.fleet.catalog import FleetCatalog
from conftest import ms, percentile, table, verdict
from tests.harness.daemon import DaemonProcess, auth_for
from tests.harness.postgres import PostgresServer, unavailable
from tests.harness.sse import Viewer

SECRET = "bench-fleet-secret-0123456789abcdef"
REQUESTS = 200
TURNS = 15
ROWS, NODES = 100_000, 10
LIST_ROUNDS = 40
RELAY_TARGET_MS, STREAM_TARGET_MS, LIST_TARGET_MS = 2.0, 5.0, 20.0
RESULTS = []


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("fleet")
    server = PostgresServer().start()
    database = server.new_database()
    secret = root / "secret"
    secret.write_text(SECRET)
    os.chmod(secret, 0o600)
    nodes = []
    try:
        for name in ("alpha", "beta"):
            home = root / name
            home.mkdir()
            (home / "config.toml").write_text(f'[fleet]\ndatabase = "{database}"\nnode = "{name}"\n'
                                              f'secret_file = "{secret}"\n')
            os.chmod(home / "config.toml", 0o600)
            nodes.append(DaemonProcess(home).start())
        yield nodes[0], nodes[1], root, database
    finally:
        for node in nodes:
            node.stop()
        server.close()
        if RESULTS:
            table("fleet (ms)", ("measure", "n", "p50", "p95", "target", "verdict"), RESULTS)


def port(daemon):
    return int(daemon.http_url.rsplit(":", 1)[1])


def timed_get(daemon, path):
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port(daemon), timeout=30)
    connection.request("GET", path, headers=auth_for(port(daemon)))
    answer = connection.getresponse()
    answer.read()
    connection.close()
    assert answer.status == 200, answer.status
    return time.perf_counter() - started


def call(daemon, method, url, body=None):
    """The answer's document, on a connection of its own (closed)."""
    connection = http.client.HTTPConnection("127.0.0.1", port(daemon), timeout=30)
    try:
        connection.request(method, url, json.dumps(body) if body is not None else None,
                           {**auth_for(port(daemon)), "Content-Type": "application/json"})
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def create(daemon, workspace):
    return call(daemon, "POST", "/api/sessions", {"workspace_path": str(workspace)})["session"]


def path(session, *rest):
    return "/".join(["", "api", "workspaces", session["workspace_id"], "sessions", session["id"], *rest])


def wait_listed(daemon, session_id):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if session_id in {s["id"] for s in call(daemon, "GET", "/api/sessions?scope=fleet&limit=1000")["sessions"]}:
            return
        time.sleep(0.1)
    raise AssertionError("not in the fleet list")


def test_relay_cost_of_a_request(fleet):
    alpha, beta, root, _ = fleet
    (root / "ws").mkdir(exist_ok=True)
    session = create(beta, root / "ws")
    wait_listed(alpha, session["id"])
    direct, relayed = [], []
    for _ in range(REQUESTS):  # interleaved: both see the same moments of the shared machine
        direct.append(timed_get(beta, path(session, "status")))
        relayed.append(timed_get(alpha, path(session, "status")))
    added = ms(statistics.median(relayed) - statistics.median(direct))
    RESULTS.append(("request, direct to the owner", REQUESTS, f"{ms(statistics.median(direct)):.2f}",
                    f"{ms(percentile(direct, 0.95)):.2f}", "-", "-"))
    RESULTS.append(("request, relayed by another node", REQUESTS, f"{ms(statistics.median(relayed)):.2f}",
                    f"{ms(percentile(relayed, 0.95)):.2f}", "-", "-"))
    RESULTS.append(("relay adds to a request (p50 difference)", REQUESTS, f"{added:.2f}", "-",
                    f"<= {RELAY_TARGET_MS}", verdict(added, RELAY_TARGET_MS)))


def test_relay_cost_of_a_streamed_event(fleet):
    alpha, beta, root, _ = fleet
    (root / "ws").mkdir(exist_ok=True)
    session = create(beta, root / "ws")
    wait_listed(alpha, session["id"])
    arrivals = {"direct": {}, "relayed": {}}
    viewers = {"direct": Viewer(port(beta), path(session, "stream")),
               "relayed": Viewer(port(alpha), path(session, "stream"))}

    def read(name):
        try:
            for frame in viewers[name].frames():
                if frame.get("id"):
                    arrivals[name][frame["id"]] = time.perf_counter()
        except (OSError, ValueError, AttributeError):
            pass  # closed under it: the run is over
    readers = [threading.Thread(target=read, args=(name,), daemon=True) for name in viewers]
    for reader in readers:
        reader.start()
    for turn in range(TURNS):
        turn_id = call(beta, "POST", path(session, "prompt"), {"message": f"turn {turn}"})["prompt"]["turn_id"]
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if call(beta, "GET", path(session, "events") + f"?turn_id={turn_id}&type=done")["events"]:
                break
            time.sleep(0.05)
    time.sleep(0.5)
    for viewer in viewers.values():
        viewer.close()
    shared = sorted(set(arrivals["direct"]) & set(arrivals["relayed"]))
    added = [arrivals["relayed"][i] - arrivals["direct"][i] for i in shared]
    assert shared, "no event seen on both streams"
    RESULTS.append(("relay adds to a streamed event (p50 difference)", len(added), f"{ms(statistics.median(added)):.2f}",
                    f"{ms(percentile(added, 0.95)):.2f}", f"<= {STREAM_TARGET_MS}",
                    verdict(ms(statistics.median(added)), STREAM_TARGET_MS)))


def test_fleet_list_over_100000_sessions_on_10_nodes(fleet):
    alpha, beta, root, database = fleet
    (root / "ws").mkdir(exist_ok=True)
    sample = create(beta, root / "ws")
    wait_listed(alpha, sample["id"])
    catalog = FleetCatalog(database)
    resource = json.dumps(sample)
    for node in range(NODES):
        catalog.register(f"bulk-{node}", f"http://127.0.0.1:{9 + node}", "bench", 8)
    rows = [(f"sess_{i:026d}", f"bulk-{i % NODES}", "ws_bulk", "ws", f"bulk {i}", "stopped", "unbound", "general",
             False, None, f"sess_{i:026d}", 0, "2026-12-04T00:00:00Z", "/nowhere", resource) for i in range(ROWS)]
    for start in range(0, ROWS, 5000):
        catalog.upsert_sessions(rows[start:start + 5000])
    catalog.close()
    timed_get(alpha, "/api/sessions?scope=fleet")
    listed, floor = [], []
    for _ in range(LIST_ROUNDS):
        floor.append(timed_get(alpha, "/api/health"))
        listed.append(timed_get(alpha, "/api/sessions?scope=fleet"))
    p50 = ms(statistics.median(listed))
    RESULTS.append(("GET /api/health (HTTP floor)", LIST_ROUNDS, f"{ms(statistics.median(floor)):.2f}",
                    f"{ms(percentile(floor, 0.95)):.2f}", "-", "-"))
    RESULTS.append((f"fleet list, default page, {ROWS:,} sessions on {NODES} nodes", LIST_ROUNDS, f"{p50:.2f}",
                    f"{ms(percentile(listed, 0.95)):.2f}", f"<= {LIST_TARGET_MS}", verdict(p50, LIST_TARGET_MS)))
