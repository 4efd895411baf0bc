"""Governed children across a daemon restart, in-process with the real manager: boot reaps a child whose
TTL ran out while no daemon watched, and one whose parent was stopped by the shutdown; a user session
with a live child keeps it. The tool path itself (caps, depth, parent stop, TTL) is in spec/tools/."""

import time

import pytest

from compozy.acp.refusal import BindFailure
from compozy.clock import epoch_from_iso
from compozy.config import from_document
from compozy.errors import CompozyError
from compozy.ids import new_id
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.turns.identity import Caller
from compozy.session.turns.turn import Turn


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


def test_a_child_past_its_ttl_is_never_admitted_nor_bound_even_before_it_is_reaped(home, workspace):
    """The reaper may be late (a timer, a daemon that was down): the TTL itself is checked at every admission
    and every bind, so an expired child never starts an agent again."""
    manager = manager_on(home)
    try:
        parent = manager.create_session({"workspace_path": str(workspace)})["session"]
        child = spawn(manager, parent["id"], "1s")
        manager.observers["children"].closing()  # no reaper: only the checks stand in the way
        expires = epoch_from_iso(child["spawn"]["expires_at"])
        while time.time() <= expires:
            time.sleep(0.05)
        with pytest.raises(CompozyError) as refused:
            manager.prompt(child["id"], None, {"message": "still there?"})
        session = manager._session(child["id"])
        turn = Turn(new_id("turn"), "direct", new_id("msg"), new_id("idem"), {}, clock=manager.services.clock)
        with pytest.raises(BindFailure) as unbound:
            manager.binder.bind(session, turn)
        after = manager.get_session(child["id"])["session"]
    finally:
        manager.shutdown()
    assert (refused.value.code, refused.value.details["session_id"]) == ("session_expired", child["id"])
    assert unbound.value.error.code == "session_expired"
    assert (after["state"], after["runtime"]["status"]) == ("active", "unbound")  # the refusals changed nothing
    assert session.runtime is None and session.candidate is None
