"""Attacks on the lines the daemon promises to hold, each reproduced against a real daemon and agent.

The workspace boundary: an agent's client file requests never reach outside the workspace, even
when a path is swapped for a symlink while a write waits for approval.
"""

import json
import os

import pytest

from compozy.cli.client import Client
from tests.harness.api import events, spath, wait_for
from tests.harness.daemon import DaemonProcess


def daemon_in_mode(home, mode):
    """A daemon deciding file requests by this [permissions] mode, for the length of a test."""
    (home / "config.toml").write_text(f'[permissions]\nmode = "{mode}"\n')
    process = DaemonProcess(home).start()
    yield process
    process.stop()


@pytest.fixture
def approve_reads_daemon(home):
    yield from daemon_in_mode(home, "approve-reads")


@pytest.fixture
def approve_all_daemon(home):
    yield from daemon_in_mode(home, "approve-all")


def workspace_and_outside(tmp_path):
    """Two sibling folders: the session's workspace and one beyond its boundary."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    return workspace, outside


def test_an_approved_write_never_follows_a_link_planted_while_it_waited(approve_reads_daemon, tmp_path):
    workspace, outside = workspace_and_outside(tmp_path)
    target = outside / "victim.txt"
    target.write_text("untouched")
    api = approve_reads_daemon.client(timeout=30)
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve())})[1]["session"]
    try:
        turn_id = api.call("POST", spath(session, "prompt"), {"message": "[write held.txt payload] go"})[1][
            "prompt"]["turn_id"]
        pending = wait_for(lambda: events(api, session, turn_id=turn_id, type="permission"), what="held write")
        os.symlink(target, workspace / "held.txt")  # swapped in while the write waits for a person
        _, answer = api.call("POST", spath(session, "approve"),
                             {"request_id": pending[0]["content"]["request_id"], "decision": "allow-once"})
        assert answer["permission"]["status"] == "approved"
        wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn")
        texts = [e["content"]["text"] for e in events(api, session, turn_id=turn_id, type="agent_message")]
        assert texts[0].startswith("write refused: access denied"), texts
        assert target.read_text() == "untouched"
        assert os.path.islink(workspace / "held.txt")
    finally:
        api.call("POST", spath(session, "stop"), {"wait": True})


def test_a_workspace_registered_over_the_home_cannot_hold_new_sessions(home, tmp_path):
    """A catalog written before the home rules may hold a workspace that contains the home: its
    sessions get no file access (compozy.boundary refuses a root of None), and new ones are refused."""
    from compozy.store.catalog import Catalog

    home.mkdir(exist_ok=True)
    (home / "secret.txt").write_text("catalog secrets")
    catalog = Catalog(home / "compozy.db")
    catalog.add_workspace("ws_01ARZ3NDEKTSV4RRFFQ69G5FAV", "legacy", str(home.resolve()))
    catalog.close()
    daemon = DaemonProcess(home).start()
    try:
        api = daemon.client(timeout=30)
        refused = pytest.raises(Exception, api.call, "POST", "/api/sessions", {"workspace": "legacy"})
        assert refused.value.code == "invalid_request"
    finally:
        daemon.stop()


def test_a_prompt_of_a_million_bytes_of_non_ascii_text_completes(daemon, workspace):
    """Issue 14, finding 10: escaped as \\u00e9 it was 3 MB on the wire, the agent dropped the line and
    the turn hung; sent as UTF-8 it fits, and a message over the cap once encoded is refused."""
    api = daemon.client(timeout=60)
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    try:
        message = "é" * 500_000
        turn_id = api.call("POST", spath(session, "prompt"), {"message": message})[1]["prompt"]["turn_id"]
        done = wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn", timeout=60)
        assert done[0]["content"]["stop_reason"] == "end_turn"
        for refused in ("\x01" * 200_000, "a\ud800b"):
            with pytest.raises(Exception) as error:
                api.call("POST", spath(session, "prompt"), {"message": refused})
            assert error.value.code == "invalid_request"
    finally:
        api.call("POST", spath(session, "stop"), {"wait": True})


HOSTILE = ("\x1b", "\x07", "\u202e", "\x9b")


def test_the_cli_shows_hostile_names_and_agent_text_escaped_and_json_exact(daemon, tmp_path):
    """Issue 14, finding 6: a folder name and agent text that would retitle the terminal, write its
    clipboard (OSC 52), clear it, reverse text or forge a row reach every human-readable output escaped."""
    from tests.harness.cli import run_cli

    workspace = tmp_path / "ws\x1b]0;pwned\x07\nsess_01FORGED  active"
    workspace.mkdir()
    api = Client(daemon.socket_url, timeout=60)
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    try:
        hostile = "\x1b]52;c;ZXZpbA==\x07 hi \u202egnp.exe \x9b2J\nsecond line"
        turn_id = api.call("POST", spath(session, "prompt"), {"message": hostile})[1]["prompt"]["turn_id"]
        wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn")
        sid = session["id"]
        outputs = {args: run_cli(daemon.home, *args) for args in [
            ("session", "list"), ("session", "status", sid), ("workspace", "list"), ("session", "history", sid),
            ("session", "events", sid), ("session", "prompt", sid, "again \x1b[2J\u202e")]}
        for args, result in outputs.items():
            assert result.returncode == 0, (args, result.stderr)
            shown = result.stdout + result.stderr
            assert not any(char in shown for char in HOSTILE), (args, shown)
        assert len(outputs[("session", "list")].stdout.strip().splitlines()) == 1  # no forged row
        assert len(outputs[("workspace", "list")].stdout.strip().splitlines()) == 1
        assert "\\x1b]0;pwned\\x07\\nsess_01FORGED" in outputs[("workspace", "list")].stdout
        assert "echo: \\x1b]52;c;ZXZpbA==\\x07 hi \\u202egnp.exe \\x9b2J\nsecond line" in \
            outputs[("session", "history", sid)].stdout  # a message body keeps its lines
        exact = run_cli(daemon.home, "session", "list", "-o", "json")
        assert json.loads(exact.stdout)["sessions"][0]["cwd"] == str(workspace)
    finally:
        api.call("POST", spath(session, "stop"), {"wait": True})


# -- the boundary races (finding 3), against the real daemon and reference agent -------------------------

LONG = os.environ.get("COMPOZY_LONG") == "1"
RACE_PROMPTS = 60 if LONG else 3  # each prompt is 40 reads and 20 writes: 180 requests in CI, 3,600 long


def swap_forever(target, secret, stop):
    """target flips between a regular file and a symlink to the outside secret, each flip one rename."""
    link, plain = target.with_name(".swap-link"), target.with_name(".swap-plain")
    while not stop.is_set():
        for make in (lambda: os.symlink(secret, link), lambda: plain.write_text("public")):
            try:
                make()
                os.replace(link if link.is_symlink() else plain, target)
            except OSError:
                pass


def test_agent_reads_and_writes_never_cross_a_file_swapped_with_a_symlink(approve_all_daemon, tmp_path):
    import threading

    workspace, outside = workspace_and_outside(tmp_path)
    secret = outside / "secret.txt"
    secret.write_text("TOPSECRET")
    (workspace / "target").write_text("public")
    api = approve_all_daemon.client(timeout=60)
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve())})[1]["session"]
    stop = threading.Event()
    swapper = threading.Thread(target=swap_forever, args=(workspace / "target", secret, stop), daemon=True)
    swapper.start()
    try:
        message = " ".join(["[read target] [read target] [write target overwritten]"] * 20)
        texts = []
        for _ in range(RACE_PROMPTS):
            turn_id = api.call("POST", spath(session, "prompt"), {"message": message})[1]["prompt"]["turn_id"]
            wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn", timeout=120)
            texts += [e["content"]["text"] for e in events(api, session, turn_id=turn_id, type="agent_message")]
    finally:
        stop.set()
        swapper.join(10)
        api.call("POST", spath(session, "stop"), {"wait": True})
    reply = "".join(texts)
    assert "TOPSECRET" not in reply
    assert secret.read_text() == "TOPSECRET" and not secret.is_symlink()
    assert reply.count("read: public") + reply.count("read: overwritten") > 0  # the race was really run
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_workspace_folder_moved_behind_a_symlink_does_not_move_the_boundary(approve_all_daemon, tmp_path):
    parent, evil = tmp_path / "projects", tmp_path / "evil"
    (parent / "ws").mkdir(parents=True)
    (evil / "ws").mkdir(parents=True)
    (evil / "ws" / "notes.txt").write_text("EVILSECRET")
    api = approve_all_daemon.client(timeout=60)
    session = api.call("POST", "/api/sessions", {"workspace_path": str((parent / "ws").resolve())})[1]["session"]
    try:
        parent.rename(tmp_path / "projects-old")
        os.symlink(evil, parent)  # the stored root's path now leads elsewhere, through a parent folder
        turn_id = api.call("POST", spath(session, "prompt"),
                           {"message": "[read notes.txt] [write notes.txt replaced]"})[1]["prompt"]["turn_id"]
        wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn")
        reply = "".join(e["content"]["text"] for e in events(api, session, turn_id=turn_id, type="agent_message"))
        assert "EVILSECRET" not in reply and reply.count("refused") == 2, reply
        assert (evil / "ws" / "notes.txt").read_text() == "EVILSECRET"
    finally:
        api.call("POST", spath(session, "stop"), {"wait": True})


def test_cancel_and_stop_work_while_a_file_request_is_outstanding(approve_reads_daemon, tmp_path):
    """Issue 14, finding 4: a write held for approval is a file request the agent waits on; cancel
    still ends the turn, the write never happens, and a stop after it is verified."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.mkfifo(workspace / "pipe")
    api = approve_reads_daemon.client(timeout=30)
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace.resolve())})[1]["session"]
    try:
        turn_id = api.call("POST", spath(session, "prompt"),
                           {"message": "[read pipe] [write held.txt payload] go"})[1]["prompt"]["turn_id"]
        wait_for(lambda: events(api, session, turn_id=turn_id, type="permission"), what="held write")
        api.call("POST", spath(session, "prompt", "cancel"), {})
        done = wait_for(lambda: events(api, session, turn_id=turn_id, type="done"), what="end of the turn")
        assert done[0]["content"]["stop_reason"] == "cancelled"
        texts = "".join(e["content"]["text"] for e in events(api, session, turn_id=turn_id, type="agent_message"))
        assert "read refused" in texts and "regular" in texts  # the FIFO answered at once, never opened for reading
        assert not (workspace / "held.txt").exists()
    finally:
        _, stopped = api.call("POST", spath(session, "stop"), {"wait": True})
    assert stopped["state"] == "stopped" and stopped["verified"] is True, stopped
