"""A daemon that shuts down ends its threads: the request and stream pools and the sessions' parked
turn workers. In-process restarts (the state machine, the served tests) once left 65 threads each,
until the machine ran out of PIDs and nothing could start a thread."""

import threading
import time

from tests.harness.api import wait_for
from tests.harness.surfaces import InProcess


def _threads():
    return {thread for thread in threading.enumerate() if thread.is_alive()}


def _settled(before, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        extra = _threads() - before
        if not extra:
            return extra
        time.sleep(0.1)
    return _threads() - before


def _one_turn(tmp_path, label):
    workspace = tmp_path / f"ws-{label}"
    workspace.mkdir()
    surface = InProcess(tmp_path / f"home-{label}").start()
    try:
        created = surface.call("session.create", {"workspace_path": str(workspace)})
        session_id = created.document["session"]["id"]
        prompted = surface.call("session.prompt", {"session_id": session_id, "message": "[chunks 2] hi"})
        assert prompted.error is None, prompted.message
    finally:
        surface.close()


def test_a_daemon_shut_down_after_a_turn_leaves_no_thread_behind(tmp_path):
    _one_turn(tmp_path, "warm")  # process-wide helpers (the deferred meta.json flusher) start once
    before = _threads()
    for round_number in range(3):
        _one_turn(tmp_path, round_number)
    leftover = _settled(before)
    assert not leftover, sorted(thread.name for thread in leftover)


def test_inspect_names_the_threads_serving_the_session_while_its_turn_runs(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    surface = InProcess(tmp_path / "home").start()
    try:
        session_id = surface.call("session.create", {"workspace_path": str(workspace)}).document["session"]["id"]
        prompted = surface.call("session.prompt", {"session_id": session_id, "message": "[wait open] hi"})
        assert prompted.error is None, prompted.message

        def named():
            threads = surface.call("session.inspect", {"session_id": session_id}).document["threads"]
            return f"turns-{session_id}" in threads["named"] and threads

        threads = wait_for(named, what="the session's turn worker in inspect")
        assert threads["running"] >= len(threads["named"]) and threads["started"] >= threads["running"]
        assert all(session_id in name for name in threads["named"])
        gates = workspace / ".compozy-gates"
        gates.mkdir()
        (gates / "open").touch()
    finally:
        surface.close()
