"""A partial agent identity in meta.json is never taken for a cleared one (the seed: "Partial identities
still require proof of exit"): only both identity fields cleared completes a stop without signalling.

The audit's probe, against the real daemon: the daemon is stopped, a session's meta.json is given a
partial identity naming a real process, the daemon boots on it, and the session is stopped. The rules
themselves are also checked on the fake process table (compozy.session.lifecycle.recorded)."""

import json
import subprocess
import sys

import pytest

from compozy import proc
from compozy.session.lifecycle.recorded import read_recorded
from tests.harness.cli import cli_json, run_cli
from tests.harness.fakes import BOOT, FakeClock, FakeProcessTable
from tests.test_daemon import wait_for


@pytest.fixture
def table():
    return FakeProcessTable(FakeClock())


@pytest.mark.parametrize("recorded", [None, {}, {"pid": None, "start_time": None, "pgid": 7, "boot_id": BOOT}])
def test_both_identity_fields_cleared_need_no_proof(table, recorded):
    assert read_recorded(recorded, table).gone


def test_a_partial_identity_of_an_earlier_boot_is_proven_gone(table):
    table.spawn(300)
    assert read_recorded({"pid": 300, "boot_id": "an-earlier-boot"}, table).gone


def test_a_pid_without_its_start_time_is_proven_gone_only_when_nothing_could_be_it(table):
    assert read_recorded({"pid": 300}, table).gone
    table.spawn(301, pgid=300, sid=300)  # a straggler left in the recorded pid's group
    verdict = read_recorded({"pid": 300}, table)
    assert not verdict.gone and verdict.leader is None and "pid 300" in verdict.unproven
    table.spawn(400)
    assert "without its start time" in read_recorded({"pid": 400, "pgid": 400}, table).unproven


def test_a_start_time_without_a_pid_cannot_be_proven(table):
    assert "without a pid" in read_recorded({"start_time": 12345}, table).unproven


def test_pid_and_start_time_are_completed_as_compozy_starts_agents(table):
    verdict = read_recorded({"pid": 300, "start_time": 400}, table)
    assert verdict.leader == proc.ProcessIdentity(300, 400, BOOT, 300, 300)  # its own group and session


# -- the audit's probe on the real daemon --------------------------------------------------------


def a_stranger():
    """A process compozy did not start (no agent marker), in a group of its own."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


def boot_with_identity(daemon, workspace, process):
    """A session the daemon saw active with `process` recorded, then an unclean-looking boot on it."""
    sid = cli_json(daemon.home, "session", "new", "--cwd", str(workspace))["session"]["id"]
    daemon.stop()
    path = daemon.home / "sessions" / sid / "meta.json"
    meta = json.loads(path.read_text())
    meta["runtime"].update(status="ready", process=process)
    path.write_text(json.dumps(meta))
    daemon.start()
    return sid


def stop_wait(daemon, sid):
    """The outcome of `session stop --wait`, which exits 1 when it is unverified."""
    result = run_cli(daemon.home, "session", "stop", sid, "--wait", "-o", "json")
    outcome = json.loads(result.stdout)
    assert result.returncode == (0 if outcome["verified"] else 1), result.stderr
    return outcome


def test_a_pid_without_start_time_that_is_alive_is_never_signalled_and_the_stop_stays_unverified(daemon, workspace):
    stranger = a_stranger()
    try:
        sid = boot_with_identity(daemon, workspace, {"pid": stranger.pid})
        session = cli_json(daemon.home, "session", "get", sid)["session"]
        assert (session["state"], session["verified"], session["attention"]) == (
            "stopping", False, "stop_verification_failed")
        outcome = stop_wait(daemon, sid)
        assert (outcome["state"], outcome["verified"], outcome["escalated"], outcome["attention"]) == (
            "stopping", False, False, "stop_verification_failed")
        warning = cli_json(daemon.home, "session", "events", sid, "--type", "runtime_warning")["events"][-1]
        assert f"pid {stranger.pid} is recorded without its start time" in warning["content"]["text"]
        assert stranger.poll() is None  # it might not be the agent: it was never signalled
    finally:
        stranger.kill()
        stranger.wait()
    # Once nothing can be it any more, a retried stop proves the exit and clears the attention.
    outcome = stop_wait(daemon, sid)
    assert (outcome["state"], outcome["verified"], outcome["escalated"]) == ("stopped", True, False)
    session = cli_json(daemon.home, "session", "get", sid)["session"]
    assert (session["state"], session["verified"], session.get("attention")) == ("stopped", True, None)


def test_pid_and_start_time_go_through_the_ladder(daemon, workspace):
    stranger = a_stranger()
    identity = wait_for(lambda: proc.identify(stranger.pid), what="the process to be readable")
    try:
        sid = boot_with_identity(daemon, workspace, {"pid": stranger.pid, "start_time": identity.start_time})
        wait_for(lambda: stranger.poll() is not None, what="boot's ladder to end the recorded process")
        session = cli_json(daemon.home, "session", "get", sid)["session"]
        assert (session["state"], session["verified"]) == ("stopped", True)
    finally:
        stranger.kill()
        stranger.wait()


def test_both_fields_cleared_complete_the_stop_without_signalling(daemon, workspace):
    stranger = a_stranger()
    try:
        sid = boot_with_identity(daemon, workspace, {"pid": None, "start_time": None, "pgid": stranger.pid})
        session = cli_json(daemon.home, "session", "get", sid)["session"]
        assert (session["state"], session["verified"]) == ("stopped", True)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
