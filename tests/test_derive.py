"""Continue and fork behaviour a scenario cannot set up: a config changed between daemon runs, a
daemon killed mid-creation, a session store that fails, and the CLI's human-readable blocks.

Each drives real managers or a real daemon with the real reference agent, on real files.
"""

import json
import subprocess
import sys

import pytest

from compozy.config import from_document
from compozy.errors import CompozyError
from compozy.ids import new_id
from compozy.manager import SessionManager
from compozy.paths import Home
from tests.harness.api import wait_for
from tests.harness import daemon as harness

ALT = {"command": [sys.executable, "-m", "compozy.agents.reference"], "env": {"COMPOZY_REFERENCE_MODELS": "alt-1"}}


def _config(routes):
    chain = [{"provider": "reference", "model": "echo-1"}, {"provider": "alt", "model": "alt-1"}][:routes]
    return from_document({"providers": {"alt": ALT}, "agents": {"chain": {"provider": "reference",
                                                                          "fallback_chain": chain}}})


def _manager(home, config=None):
    return SessionManager(Home(home), config or from_document({})).start()


def _turn(manager, session, message):
    turn_id = manager.prompt(session["id"], session["workspace_id"], {"message": message})["prompt"]["turn_id"]
    wait_for(lambda: manager.events(session["id"], None, {"turn_id": turn_id, "type": "done,error"})["events"],
             what=f"end of turn {turn_id}")
    return turn_id


def _source(manager, workspace):
    session = manager.create_session({"workspace_path": str(workspace)})["session"]
    _turn(manager, session, "first")
    return session


def test_a_route_removed_since_refuses_the_first_bind_and_nothing_runs_elsewhere(home, workspace):
    manager = _manager(home, _config(2))
    try:
        source = _source(manager, workspace)
        child = manager.continue_session(source["id"], source["workspace_id"], {
            "agent_name": "chain", "idempotency_key": "r2", "route": 2})["session"]
    finally:
        manager.shutdown()
    manager = _manager(home, _config(1))  # the second account was removed from config.toml meanwhile
    try:
        with pytest.raises(CompozyError) as refused:
            manager.prompt(child["id"], child["workspace_id"], {"message": "go"})
        assert refused.value.code == "route_not_found"
        assert refused.value.message == 'agent "chain" declares 1 route(s); route 2 does not exist'
        read = manager.get_session(child["id"])["session"]
        assert read["runtime"]["status"] == "unbound" and "effective" not in read["runtime"]
        assert manager.history(child["id"], None)["messages"] == []
        # An explicit runtime still works, and binds what it names.
        answer = manager.prompt(child["id"], child["workspace_id"], {"message": "go",
                                                                     "runtime": {"provider": "reference"}})
        assert answer["prompt"]["disposition"] == "started"
        assert manager.get_session(child["id"])["session"]["runtime"]["effective"]["provider"] == "reference"
    finally:
        manager.shutdown()


LOCKED = {"command": [sys.executable, "-m", "compozy.agents.reference"], "env": {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1",
                                                                             "COMPOZY_REFERENCE_AUTH_REFUSE": "1"}}


def _overridden(second_route):
    """Agent general: its default account refuses (not logged in); the second route is `second_route`."""
    return from_document({"providers": {"alt": ALT, "locked": LOCKED}, "agents": {"general": {
        "provider": "locked", "fallback_chain": [{"provider": "reference", "model": "echo-2"}, second_route]}}})


def test_a_fork_on_an_account_the_agent_no_longer_declares_binds_its_default_route_and_says_so(home, workspace):
    chain = from_document({"providers": {"alt": ALT, "locked": LOCKED}, "agents": {"general": {
        "provider": "locked", "fallback_chain": [{"provider": "locked"}, {"provider": "alt", "model": "alt-1"}]}}})
    manager = _manager(home, chain)
    try:
        source = _source(manager, workspace)  # ran on route 2: alt, the overridden account
        assert manager.get_session(source["id"])["session"]["runtime"]["effective"]["provider"] == "alt"
    finally:
        manager.shutdown()
    # config.toml changed meanwhile: route 2 is now another account.
    manager = _manager(home, _overridden({"provider": "reference", "model": "echo-large"}))
    try:
        forked = manager.fork_session(source["id"], source["workspace_id"], {"idempotency_key": "f1"})
        derivation = forked["derivation"]
        assert "route" not in derivation
        assert derivation["route_warning"] == (
            'the source ran on route 2 (alt/alt-1) of agent "general", which now declares reference/echo-large '
            "there: the fork binds the agent's default route instead")
        assert "provider" not in (forked["session"]["runtime"]["selected"] or {})
        child = manager.get_session(forked["session"]["id"])["session"]
        _turn(manager, child, "go")
        assert manager.get_session(child["id"])["session"]["runtime"]["effective"] == {
            "provider": "reference", "model": "echo-2", "reasoning_effort": "medium", "speed": "normal"}
    finally:
        manager.shutdown()


def test_a_derivation_whose_session_cannot_be_written_is_withdrawn(home, workspace, monkeypatch):
    """derivation:creating->withdrawn: nothing of it persists, and the retry creates the session."""
    manager = _manager(home)
    try:
        source = _source(manager, workspace)
        create = manager.store.create

        def full_disk(record, carried=None):
            raise OSError(28, "No space left on device")
        monkeypatch.setattr(manager.store, "create", full_disk)
        body = {"agent_name": "general", "idempotency_key": "c1"}
        with pytest.raises(OSError):
            manager.continue_session(source["id"], source["workspace_id"], body)
        assert manager.catalog.derived.derivation(source["workspace_id"], "c1") is None
        assert manager.list_sessions({"parent": source["id"]})["sessions"] == []
        monkeypatch.setattr(manager.store, "create", create)
        answer = manager.continue_session(source["id"], source["workspace_id"], body)
        assert answer.kind == "created" and answer["session"]["lineage"]["kind"] == "continue"
    finally:
        manager.shutdown()


def test_a_first_prompt_staged_when_the_daemon_stopped_is_admitted_once_by_a_repeat(home, workspace, monkeypatch):
    """The daemon stops after the new session exists and before its message is admitted: it keeps
    first_prompt staged across the restart, and repeating the request sends the message once."""
    manager = _manager(home)
    body = {"agent_name": "general", "idempotency_key": "c1", "message": "[recall] carry on"}
    try:
        source = _source(manager, workspace)

        def killed(session, prompt):
            raise KeyboardInterrupt  # the daemon went down between the two steps
        monkeypatch.setattr(manager.deriver.engine, "prompt", killed)
        with pytest.raises(KeyboardInterrupt):
            manager.continue_session(source["id"], source["workspace_id"], body)
    finally:
        manager.shutdown()
    manager = _manager(home)
    try:
        [child] = manager.list_sessions({"parent": source["id"]})["sessions"]
        assert child["derivation"]["first_prompt"] == "staged" and manager.history(child["id"], None)["messages"] == []
        for _ in range(2):
            answer = manager.continue_session(source["id"], source["workspace_id"], body)
            assert answer.kind == "replayed" and answer["session"]["id"] == child["id"]
            assert answer["derivation"]["first_prompt"] == "admitted"
        wait_for(lambda: manager.events(child["id"], None, {"type": "done"})["events"])
        messages = manager.history(child["id"], None)["messages"]
        assert [m["text"] for m in messages] == ["[recall] carry on", "[context replayed: 2 messages] history: first"]
    finally:
        manager.shutdown()


@pytest.mark.parametrize("written", [True, False], ids=["session-written", "session-not-written"])
def test_boot_settles_a_derivation_an_unclean_exit_caught_mid_creation(home, workspace, written):
    """boot:derivation:creating->created and ->withdrawn: the row is written before the session."""
    manager = _manager(home)
    try:
        source = _source(manager, workspace)
        answer = manager.continue_session(source["id"], source["workspace_id"],
                                          {"agent_name": "general", "idempotency_key": "c1"})
        child = answer["session"]["id"] if written else new_id("sess")
        derived = manager.catalog.derived
        if written:  # killed after the session was written, before its row said so
            derived.update_derivation(source["workspace_id"], "c1", state="creating", result=None)
        else:  # killed while the session directory was half written
            derived.update_derivation(source["workspace_id"], "c1", state="creating", result=None,
                                      child_session_id=child)
            (home / "sessions" / child).mkdir()
    finally:
        manager.shutdown()
    manager = _manager(home)
    try:
        row = manager.catalog.derived.derivation(source["workspace_id"], "c1")
        if written:
            assert row["state"] == "created" and row["result"]["source_session_id"] == source["id"]
            again = manager.continue_session(source["id"], source["workspace_id"],
                                             {"agent_name": "general", "idempotency_key": "c1"})
            assert again.kind == "replayed" and again["session"]["id"] == child
        else:
            assert row is None and not (home / "sessions" / child).exists()
    finally:
        manager.shutdown()


def _cli(home, *argv):
    return subprocess.run([sys.executable, harness.ENTRY, *argv], env=harness.test_environment(home), capture_output=True,
                          text=True, timeout=60)


def test_the_cli_prints_the_seed_s_blocks_and_the_key_to_rerun_with(home, workspace):
    (home / "config.toml").write_text(f'[providers.locked]\ncommand = {json.dumps(ALT["command"])}\n'
                                      'env = {COMPOZY_REFERENCE_REQUIRE_AUTH = "1", '
                                      'COMPOZY_REFERENCE_AUTH_REFUSE = "1"}\n\n'
                                      '[agents.locked]\nprovider = "locked"\n')
    daemon = harness.DaemonProcess(home).start()
    try:
        new = _cli(home, "session", "new", "--cwd", str(workspace), "-q")
        source = new.stdout.strip()
        assert _cli(home, "session", "prompt", source, "first").returncode == 0
        done = _cli(home, "session", "continue", source, "--agent", "general", "--message", "carry on")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].startswith(f"Continued {source} (general) into sess_") and lines[0].endswith("(general)")
        child = lines[0].split(" into ")[1].split()[0]
        assert lines[1].startswith(f"  Origin        continue · from {source} · general · through turn turn_")
        assert lines[2].startswith("  Context       2 messages · ") and lines[2].endswith(" KiB · nothing omitted")
        assert lines[3:5] == ["  Seed          replay", "  First prompt  admitted"]
        status = _cli(home, "session", "status", child).stdout
        assert f"Origin        continue · from {source} · general · through turn turn_" in status
        assert "Derivation    replay · first prompt admitted · 2 messages · " in status
        refused = _cli(home, "session", "continue", source, "--agent", "locked", "--message", "let me in",
                       "--idempotency-key", "c9")
        assert refused.returncode == 1
        assert "New session   sess_" in refused.stderr and "--idempotency-key c9" in refused.stderr
        assert "Error: provider_auth_failure: " in refused.stderr
        key = json.loads(_cli(home, "session", "get", child, "-o", "json").stdout)["session"]["derivation"][
            "idempotency_key"]
        again = _cli(home, "session", "continue", source, "--agent", "general", "--message", "carry on",
                     "--idempotency-key", key)
        assert again.returncode == 0 and "  Replayed      yes" in again.stdout
    finally:
        daemon.stop()
