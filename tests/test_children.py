"""Governed children across a daemon restart, in-process with the real manager: boot reaps a child whose
TTL ran out while no daemon watched, and one whose parent was stopped by the shutdown; a user session
with a live child keeps it. The tool path itself (caps, depth, parent stop, TTL) is in spec/tools/."""

import time

from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.turns.identity import Caller


def manager_on(home):
    return SessionManager(Home(home), from_document({})).start()


def wait_state(manager, session_id, state, within=30.0):
    deadline = time.monotonic() + within
    while True:
        session = manager.get_session(session_id)["session"]
        if session["state"] == state or time.monotonic() > deadline:
            return session
        time.sleep(0.05)


def spawn(manager, parent_id, ttl):
    caller = Caller(manager._session(parent_id), "unused")
    return manager.spawn_session(caller, {"name": f"child-{ttl}"}, {"ttl": ttl, "role": "helper"})["session"]


def test_boot_reaps_an_expired_child_and_keeps_the_rest(home, workspace):
    manager = manager_on(home)
    parent = manager.create_session({"workspace_path": str(workspace)})["session"]
    short, long = spawn(manager, parent["id"], "1s"), spawn(manager, parent["id"], "30m")
    manager.shutdown()
    time.sleep(1.5)
    manager = manager_on(home)
    try:
        reaped = wait_state(manager, short["id"], "stopped")
        assert (reaped["stop_reason"], reaped["stop_detail"]) == ("timeout", "spawn ttl expired")
        assert manager.get_session(long["id"])["session"]["state"] == "active"
    finally:
        manager.shutdown()


def test_boot_reaps_the_children_of_a_parent_the_shutdown_stopped(home, workspace):
    manager = manager_on(home)
    parent = manager.create_session({"workspace_path": str(workspace)})["session"]
    manager.prompt(parent["id"], None, {"message": "bind me"})
    child = spawn(manager, parent["id"], "30m")
    wait_state(manager, parent["id"], "active")
    deadline = time.monotonic() + 30
    while manager.get_session(parent["id"])["session"]["runtime"]["status"] != "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    manager.shutdown()
    manager = manager_on(home)
    try:
        assert manager.get_session(parent["id"])["session"]["stop_reason"] == "shutdown"
        reaped = wait_state(manager, child["id"], "stopped")
        assert reaped["stop_reason"] == "owner_released"
    finally:
        manager.shutdown()
