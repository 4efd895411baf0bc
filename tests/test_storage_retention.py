"""Bounded storage (issue 26 items 5, 6): the storage report, retention that compacts and deletes only archived
sessions past their days (a dry run lists the same and changes nothing; each deletion is in the daemon's log),
and the disk budget's attention item, on a real daemon and its real files.
"""

import json
import sqlite3
import sys
from datetime import datetime, timedelta, timezone

import pytest

from compozy.store.compaction import tree_bytes
from tests.harness.api import events, run_turn, spath, wait_for
from tests.harness.cli import run_cli
from tests.harness.daemon import DaemonProcess
from tests.test_tool_server import create

CONFIG = ('[providers.reference]\ncommand = ["{python}", "-m", "compozy.agents.reference"]\n'
          "[retention]\ncompact_archived_after_days = 30\ndelete_archived_after_days = 90\n"
          "[storage]\nmax_bytes = {budget}\n")


def start(home, budget=0):
    (home / "config.toml").write_text(CONFIG.format(python=sys.executable, budget=budget))
    return DaemonProcess(home).start()


@pytest.fixture
def daemon(home):
    process = start(home)
    yield process
    process.stop()


def archived_days_ago(home, session, days):
    """Move a session's archive time back (as if archived that long ago); the next boot indexes meta.json again."""
    path = home / "sessions" / session["id"] / "meta.json"
    document = json.loads(path.read_text())
    stamp = datetime.now(timezone.utc) - timedelta(days=days)
    document["archived_at"] = stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    path.write_text(json.dumps(document))


def chunk_rows(home, session):
    with sqlite3.connect(home / "sessions" / session["id"] / "events.db") as db:
        return db.execute("SELECT COUNT(*) FROM events WHERE type = 'agent_message'").fetchone()[0]


def test_retention_compacts_and_deletes_only_archived_sessions_past_their_days(home, daemon, workspace):
    api = daemon.client(timeout=30)
    old, older, recent, active = (create(api, workspace, name=n) for n in ("old", "older", "recent", "active"))
    for session in (old, older, recent, active):
        run_turn(api, session, "[chunks 300] a long answer")
    for session in (old, older, recent):
        api.call("POST", spath(session, "archive"), query={"stop": "true"})
    history = api.call("GET", spath(old, "history"))[1]["messages"]
    daemon.stop()
    archived_days_ago(home, old, 40)
    archived_days_ago(home, older, 100)
    daemon.start()
    api = daemon.client(timeout=30)
    before = {s["session_id"]: s["kinds"]["events"] for s in api.call("GET", "/api/storage")[1]["storage"]["sessions"]}

    plan = api.call("POST", "/api/storage/retention", {"dry_run": True})[1]["retention"]
    assert [s["session_id"] for s in plan["compact"]] == [old["id"]]
    assert [s["session_id"] for s in plan["delete"]] == [older["id"]]
    assert chunk_rows(home, old) > 300 and (home / "sessions" / older["id"]).exists()  # the dry run changed nothing

    by_cli = run_cli(home, "--url", daemon.socket_url, "storage", "--retention", "-o", "json")
    assert by_cli.returncode == 0, by_cli.stderr
    done = json.loads(by_cli.stdout)["retention"]
    assert [s["session_id"] for s in done["compacted"]] == [old["id"]]
    assert chunk_rows(home, old) == 1 and chunk_rows(home, recent) > 300 and chunk_rows(home, active) > 300
    assert not (home / "sessions" / older["id"]).exists()
    assert f"retention.deleted session_ids={older['id']}" in (home / "logs" / "compozy.log").read_text()
    assert api.call("GET", spath(old, "history"))[1]["messages"] == history  # the conversation reads the same
    after = {s["session_id"]: s["kinds"]["events"] for s in api.call("GET", "/api/storage")[1]["storage"]["sessions"]}
    assert after[old["id"]] <= 0.4 * before[old["id"]]
    again = api.call("POST", "/api/storage/retention", {})[1]["retention"]
    assert again["compact"] == [] and again["delete"] == []  # compacted once


def test_the_storage_report_by_kind_workspace_and_session(home, daemon, workspace):
    api = daemon.client(timeout=30)
    session = create(api, workspace)
    run_turn(api, session, "hello")
    report = api.call("GET", "/api/storage")[1]["storage"]
    assert set(report["kinds"]) == {"events", "wal", "checkpoints", "crash_bundles", "logs", "search_index",
                                    "catalog", "other"}
    assert report["kinds"]["events"] > 0 and report["kinds"]["catalog"] > 0 and report["kinds"]["logs"] > 0
    assert report["total_bytes"] == sum(report["kinds"].values())
    assert [s["session_id"] for s in report["sessions"]] == [session["id"]]
    repository = tree_bytes(home / "checkpoints" / session["workspace_id"])
    assert report["workspaces"] == [{"workspace_id": session["workspace_id"], "checkpoints": repository,
                                     "bytes": report["sessions"][0]["bytes"] + repository}]
    assert report["growth"]["days"] == 7 and report["attention"] is None
    shown = run_cli(home, "--url", daemon.socket_url, "storage")
    assert shown.returncode == 0 and session["id"] in shown.stdout and "growth" in shown.stdout


def test_the_checkpoint_repositories_count_by_kind_and_workspace_and_stay_after_their_sessions(home, daemon,
                                                                                            workspace):
    api = daemon.client(timeout=30)
    session = create(api, workspace)
    before = api.call("GET", "/api/storage")[1]["storage"]
    before_repository = tree_bytes(home / "checkpoints")
    run_turn(api, session, "[blob big.bin 512] a file the turn made")  # 512 KiB the shadow repository stores
    report = api.call("GET", "/api/storage")[1]["storage"]
    repository = tree_bytes(home / "checkpoints" / session["workspace_id"])
    assert repository > 0 and report["kinds"]["checkpoints"] == tree_bytes(home / "checkpoints")
    assert report["kinds"]["checkpoints"] - before["kinds"]["checkpoints"] >= repository - before_repository
    assert report["total_bytes"] == sum(report["kinds"].values())
    row, = report["workspaces"]
    assert row["checkpoints"] == repository and row["bytes"] == report["sessions"][0]["bytes"] + repository
    shown = run_cli(home, "--url", daemon.socket_url, "storage")
    assert shown.returncode == 0 and session["workspace_id"] in shown.stdout and "checkpoints" in shown.stdout

    api.call("POST", spath(session, "stop"), {"wait": True})
    api.call("DELETE", spath(session))
    after = api.call("GET", "/api/storage")[1]["storage"]
    left = tree_bytes(home / "checkpoints" / session["workspace_id"])  # its objects stay until `compozy gc`
    assert after["sessions"] == [] and left > 0 and after["kinds"]["checkpoints"] == left
    assert after["workspaces"] == [{"workspace_id": session["workspace_id"], "bytes": left, "checkpoints": left}]


def test_a_disk_budget_at_90_percent_raises_attention_and_an_inbox_item_and_deletes_nothing(home, workspace):
    daemon = start(home, budget=200_000)
    try:
        api = daemon.client(timeout=30)
        session = create(api, workspace)
        run_turn(api, session, "[chunks 50] fill")
        report = api.call("GET", "/api/storage")[1]["storage"]
        assert report["attention"]["kind"] == "storage_budget" and report["attention"]["percent"] >= 90
        status = wait_for(lambda: api.call("GET", "/api/status")[1]["status"]["daemon_attention"],
                          what="the budget in the daemon's status")
        assert status[0]["kind"] == "storage_budget"
        shown = run_cli(home, "--url", daemon.socket_url, "status")
        assert shown.returncode == 0 and "storage_budget: the home uses" in shown.stdout
        assert len(events(api, session, limit=1000)) > 50  # nothing deleted
        item, = wait_for(lambda: api.call("GET", "/api/attention", query={"kind": "storage_budget"})[1]["items"],
                         what="the budget's item in the inbox")
        assert item["session_id"] is None and [a["id"] for a in item["actions"]] == ["dismiss"]
    finally:
        daemon.stop()
    daemon = start(home, budget=0)  # the limit lifted while the daemon was down: the item resolves at boot
    try:
        api = daemon.client(timeout=30)
        resolved, = wait_for(lambda: api.call("GET", "/api/attention", query={"kind": "storage_budget",
                                                                               "status": "resolved"})[1]["items"],
                             what="the budget's item resolved")
        assert resolved["id"] == item["id"] and "back under" in resolved["resolution"]
        assert api.call("GET", "/api/attention", query={"kind": "storage_budget"})[1]["items"] == []
    finally:
        daemon.stop()
