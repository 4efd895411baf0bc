"""File checkpoints with the real daemon, the reference agent and real git: the user's own repository is never
touched, and a checkpoint that cannot be taken (no git, a timeout, too many files) says why and fails no turn."""

import os
import shutil
import subprocess
import time

import pytest

from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home
from tests.harness.api import run_turn
from tests.harness.cli import run_cli
from tests.test_tool_server import create

DEADLINE = 30.0


def _manager(home, **settings):
    return SessionManager(Home(home), from_document({"checkpoints": settings} if settings else {})).start()


def _turn(manager, session_id, message):
    """Prompt and wait for the turn's terminal event; the turn's events."""
    turn_id = manager.prompt(session_id, None, {"message": message})["prompt"]["turn_id"]
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        events = manager.events(session_id, None, {"turn_id": turn_id})["events"]
        if any(event["type"] in ("done", "error") for event in events):
            return turn_id, events
        time.sleep(0.05)
    raise AssertionError(f"turn {turn_id} did not end")


def _git(folder, *arguments):
    return subprocess.run(["git", *arguments], cwd=folder, capture_output=True, text=True, check=True).stdout


def _checkpoints(events):
    return [event["content"] for event in events if event["type"] == "checkpoint"]


@pytest.fixture
def repository(workspace):
    """The workspace as a user's git repository: a commit, a staged change, a stash, an exclude rule."""
    _git(workspace, "init", "-q")
    _git(workspace, "config", "user.email", "u@example.com")
    _git(workspace, "config", "user.name", "u")
    (workspace / "tracked.txt").write_text("one\n")
    _git(workspace, "add", "tracked.txt")
    _git(workspace, "commit", "-q", "-m", "first")
    (workspace / "tracked.txt").write_text("stashed\n")
    _git(workspace, "stash", "-q")
    (workspace / "staged.txt").write_text("staged\n")
    _git(workspace, "add", "staged.txt")
    (workspace / ".git" / "info" / "exclude").write_text("secret-notes/\n")
    return workspace


def test_the_users_repository_is_never_touched_and_its_exclude_rules_are_honoured(home, repository):
    git_dir = repository / ".git"
    before = {"refs": _git(repository, "for-each-ref"), "status": _git(repository, "status", "--porcelain"),
              "stash": _git(repository, "stash", "list"), "index": (git_dir / "index").read_bytes(),
              "head": _git(repository, "rev-parse", "HEAD")}
    manager = _manager(home)
    try:
        session_id = manager.create_session({"workspace_path": str(repository)})["session"]["id"]
        _, events = _turn(manager, session_id, "[put secret-notes/n.txt hush] [put made.txt x] go")
    finally:
        manager.shutdown()
    end = _checkpoints(events)[-1]
    assert end["kind"] == "end" and [item["path"] for item in end["files"]] == ["made.txt"]
    assert _git(repository, "for-each-ref") == before["refs"]
    assert _git(repository, "stash", "list") == before["stash"]
    assert (git_dir / "index").read_bytes() == before["index"]
    assert _git(repository, "rev-parse", "HEAD") == before["head"]
    assert _git(repository, "status", "--porcelain") == before["status"] + "?? made.txt\n"
    assert not any("compozy" in path.name for path in git_dir.rglob("*"))


def test_the_first_checkpoint_of_a_repository_holds_its_files_but_never_its_git_folder(home, repository):
    manager = _manager(home)
    try:
        session_id = manager.create_session({"workspace_path": str(repository)})["session"]["id"]
        _, events = _turn(manager, session_id, "go")
    finally:
        manager.shutdown()
    start = _checkpoints(events)[0]
    assert sorted(item["path"] for item in start["files"]) == ["staged.txt", "tracked.txt"]


def test_without_git_the_event_says_so_and_the_turn_goes_on(home, workspace, monkeypatch, tmp_path):
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # the agent is started through this Python itself; git is not found
    manager = _manager(home)
    try:
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        _, events = _turn(manager, session_id, "[put a.txt x] go")
    finally:
        manager.shutdown()
    assert [(c["kind"], c["status"], c["reason"]) for c in _checkpoints(events)] == \
        [("start", "failed", "git_unavailable"), ("end", "failed", "git_unavailable")]
    assert events[-1]["type"] == "done" and events[-1]["content"]["stop_reason"] == "end_turn"


def test_a_checkpoint_that_times_out_says_why_and_the_turn_goes_on(home, workspace, monkeypatch, tmp_path):
    # git that takes half a second to start, against a timeout of 100 ms: every call times out, however fast
    # the machine (a real git can finish inside a timeout as short as 1 ms).
    slow = tmp_path / "slow-git"
    slow.mkdir()
    (slow / "git").write_text(f'#!/bin/sh\nsleep 0.5\nexec {shutil.which("git")} "$@"\n')
    (slow / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{slow}{os.pathsep}{os.environ['PATH']}")
    manager = _manager(home, timeout="100ms")
    try:
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        _, events = _turn(manager, session_id, "[put a.txt x] go")
    finally:
        manager.shutdown()
    assert {c["reason"] for c in _checkpoints(events)} == {"timeout"}
    assert events[-1]["type"] == "done"


def test_a_workspace_with_too_many_files_is_not_checkpointed(home, workspace):
    for number in range(5):
        (workspace / f"f{number}.txt").write_text("x")
    manager = _manager(home, max_files=3)
    try:
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        _, events = _turn(manager, session_id, "go")
        listed = manager.list_checkpoints(session_id, None)["checkpoints"]
    finally:
        manager.shutdown()
    assert [c["reason"] for c in _checkpoints(events)] == ["too_many_files", "too_many_files"]
    assert listed[0]["status"] == "failed" and "checkpoints.max_files" in listed[0]["message"]


def test_two_sessions_of_a_workspace_share_its_objects(home, workspace):
    manager = _manager(home)
    try:
        first = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        second = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        _turn(manager, first, "[blob shared.bin 64] go")
        _, events = _turn(manager, second, "go")
    finally:
        manager.shutdown()
    repositories = [path for path in (home / "checkpoints").iterdir() if (path / "HEAD").exists()]
    assert len(repositories) == 1
    refs = _git(repositories[0], "--git-dir", str(repositories[0]), "for-each-ref", "--format=%(refname)")
    assert {line.split("/")[2] for line in refs.split()} == {first, second}
    # The second session's first checkpoint reads the same blob: the object is stored once.
    assert _checkpoints(events)[0]["files"] == [{"path": "shared.bin", "status": "added"}]
    objects = _git(repositories[0], "--git-dir", str(repositories[0]), "count-objects", "-v")
    assert "count: 3\n" in objects  # the empty tree, then shared.bin's blob and the tree holding it: once each


def test_removing_a_session_drops_its_checkpoint_references(home, workspace):
    manager = _manager(home)
    try:
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        _turn(manager, session_id, "[put a.txt x] go")
        manager.stop_session(session_id, None, {"wait": True})
        manager.remove_session(session_id)
    finally:
        manager.shutdown()
    repository = next((home / "checkpoints").iterdir())
    assert _git(repository, "--git-dir", str(repository), "for-each-ref") == ""


def test_the_cli_prints_a_turns_diff_line_by_line(home, daemon, workspace):
    (workspace / "notes.txt").write_text("old line\nkept\n")
    api = daemon.client(timeout=30)
    session = create(api, workspace)
    run_turn(api, session, "[put notes.txt new-line] go")
    shown = run_cli(home, "--url", daemon.socket_url, "session", "diff", session["id"])
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "--- a/notes.txt" in lines and "+++ b/notes.txt" in lines
    assert "-old line" in lines and "-kept" in lines and "+new-line" in lines
    assert not any("\\n" in line for line in lines)  # real lines, not an escaped one-line string
