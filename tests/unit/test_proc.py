"""Tests for compozy.proc on real processes: identity, liveness, tree discovery, stop ladder."""
import dataclasses
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from compozy import proc

MARK_NAME = "COMPOZY_AGENT_MARK"
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
STUBBORN = "trap '' TERM; sleep 300 & setsid sleep 301 & echo ready; wait"
TERM_HANDLER = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
    "print('ready', flush=True)\n"
    "time.sleep(100)\n"
)


def marked_pids(marker: str) -> list[int]:
    """Live processes whose environment holds marker (independent of the code under test)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if marker.encode() in f.read().split(b"\0"):
                    found.append(int(name))
        except (OSError, ValueError):
            continue
    return found


def wait_for(predicate, timeout: float = 2.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    raise AssertionError("condition not met in time")


class Spawner:
    """Starts marked children and kills every marked process at teardown."""

    def __init__(self):
        self.marker = f"{MARK_NAME}={uuid.uuid4().hex}"
        self.popens: list[subprocess.Popen] = []

    def __call__(self, argv, *, ready=False, start_new_session=True):
        name, value = self.marker.split("=", 1)
        env = {**os.environ, name: value}
        popen = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True,
                                 start_new_session=start_new_session)
        self.popens.append(popen)
        if ready:
            assert popen.stdout.readline().strip() == "ready"
        return popen

    def cleanup(self):
        for pid in marked_pids(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for popen in self.popens:
            popen.kill()
            popen.wait()
            popen.stdout.close()
        wait_for(lambda: not marked_pids(self.marker))


@pytest.fixture
def spawn():
    spawner = Spawner()
    try:
        yield spawner
    finally:
        spawner.cleanup()


def children_of(pid: int) -> list[proc.ProcStat]:
    stats = [proc.read_stat(int(n)) for n in os.listdir("/proc") if n.isdigit()]
    return [s for s in stats if s is not None and s.ppid == pid]


def escapee_of(leader: proc.ProcessIdentity) -> proc.ProcStat | None:
    """The setsid child of the stubborn fixture, once it has left the leader's session."""
    return next((s for s in children_of(leader.pid) if s.session != leader.sid), None)


# --- identity -------------------------------------------------------------------------------

def test_read_stat_of_self_matches_os_calls():
    stat = proc.read_stat(os.getpid())
    assert (stat.ppid, stat.pgrp, stat.session) == (os.getppid(), os.getpgrp(), os.getsid(0))
    assert stat.state == "R" and stat.start_time > 0


def test_identity_of_process_whose_name_has_spaces_and_parens(spawn, tmp_path):
    weird = tmp_path / "we ird) name)"
    shutil.copy("/bin/sleep", weird)
    popen = spawn([str(weird), "30"])
    wait_for(lambda: ")" in pathlib.Path(f"/proc/{popen.pid}/comm").read_text())
    stat = proc.read_stat(popen.pid)
    assert stat.state in "SR" and stat.ppid == os.getpid()
    identity = proc.identify(popen.pid)
    assert identity.pgid == os.getpgid(popen.pid) == popen.pid
    assert identity.sid == os.getsid(popen.pid)
    assert identity.start_time == stat.start_time and identity.boot_id == proc.boot_id()


def test_identity_round_trips_through_dict():
    identity = proc.identify(os.getpid())
    assert proc.ProcessIdentity.from_dict(identity.to_dict()) == identity
    assert proc.ProcessIdentity.from_dict(None) is None
    assert proc.ProcessIdentity.from_dict({"pid": 1}) is None
    assert proc.ProcessIdentity.from_dict({**identity.to_dict(), "start_time": "x"}) is None


def test_read_stat_and_identify_of_missing_pid():
    assert proc.read_stat(2**22 + 1) is None
    assert proc.identify(2**22 + 1) is None


# --- liveness ---------------------------------------------------------------------------------

def test_is_alive_false_after_exit_and_reap(spawn):
    popen = spawn(["sleep", "30"])
    identity = proc.identify(popen.pid)
    assert proc.is_alive(identity)
    popen.kill()
    popen.wait()
    assert not proc.is_alive(identity)


def test_zombie_counts_as_dead(spawn):
    popen = spawn(["sleep", "30"])
    identity = proc.identify(popen.pid)
    popen.kill()
    wait_for(lambda: proc.read_stat(popen.pid).state == "Z")
    assert not proc.is_alive(identity)
    assert proc.identify(popen.pid) is None


def test_zombie_main_thread_with_live_thread_counts_as_alive(spawn):
    code = ("import ctypes, threading, time\n"
            "threading.Thread(target=time.sleep, args=(30,)).start()\n"
            "print('ready', flush=True)\n"
            "ctypes.CDLL(None).pthread_exit(None)\n")
    popen = spawn([sys.executable, "-c", code], ready=True)
    identity = proc.identify(popen.pid)
    wait_for(lambda: proc.read_stat(popen.pid).state == "Z")
    assert proc.is_alive(identity)


def test_wrong_start_time_or_boot_means_not_alive(spawn):
    popen = spawn(["sleep", "30"])
    identity = proc.identify(popen.pid)
    assert not proc.is_alive(dataclasses.replace(identity, start_time=identity.start_time - 1))
    assert not proc.is_alive(dataclasses.replace(identity, boot_id="other-boot"))


def test_pidfd_and_signal_refuse_a_reused_pid(spawn):
    popen = spawn(["sleep", "30"])
    identity = proc.identify(popen.pid)
    impostor = dataclasses.replace(identity, start_time=identity.start_time - 1)
    fds_before = len(os.listdir("/proc/self/fd"))
    assert proc.open_pidfd(impostor) is None
    assert proc.send_signal(impostor, signal.SIGKILL) is False
    assert len(os.listdir("/proc/self/fd")) == fds_before
    assert proc.wait_gone([identity], time.monotonic() + 0.1) == [identity]


def test_send_signal_delivers_to_the_right_process(spawn):
    popen = spawn(["sleep", "30"])
    identity = proc.identify(popen.pid)
    fd = proc.open_pidfd(identity)
    assert fd is not None
    os.close(fd)
    assert proc.send_signal(identity, signal.SIGKILL) is True
    assert popen.wait(timeout=2) == -signal.SIGKILL
    assert proc.send_signal(identity, signal.SIGKILL) is False


def test_signal_group_reports_missing_group_and_refuses_own():
    assert proc.signal_group(2**22 + 1, 0) is False
    with pytest.raises(ValueError):
        proc.signal_group(os.getpgrp(), 0)


# --- tree discovery -------------------------------------------------------------------------

def test_find_related_finds_group_members(spawn):
    popen = spawn(["bash", "-c", "sleep 30 & sleep 31 & echo ready; wait"], ready=True)
    leader = proc.identify(popen.pid)
    wait_for(lambda: len(children_of(leader.pid)) == 2)
    related = proc.find_related(leader)
    assert {r.pid for r in related} == {s.pid for s in children_of(leader.pid)}
    assert all(r.pgid == leader.pgid for r in related)


def test_find_related_follows_ppid_into_a_new_session(spawn):
    popen = spawn(["bash", "-c", "setsid sleep 30 & echo ready; wait"], ready=True)
    leader = proc.identify(popen.pid)
    escapee = wait_for(lambda: escapee_of(leader))
    assert escapee.pid in {r.pid for r in proc.find_related(leader)}


def test_find_related_finds_orphaned_escapee_by_marker_only(spawn):
    popen = spawn(["bash", "-c", "setsid -f sleep 30; echo ready; sleep 30"], ready=True)
    leader = proc.identify(popen.pid)

    def orphaned_escapees():
        stats = [proc.read_stat(pid) for pid in marked_pids(spawn.marker)]
        return [s.pid for s in stats if s and s.ppid != leader.pid and s.session != leader.sid]
    escaped = wait_for(orphaned_escapees)
    assert len(escaped) == 1
    assert escaped[0] not in {r.pid for r in proc.find_related(leader)}
    assert escaped[0] in {r.pid for r in proc.find_related(leader, spawn.marker)}
    assert escaped[0] not in {r.pid for r in proc.find_related(leader, spawn.marker[:-1])}


def test_find_related_excludes_leader_and_self(spawn):
    popen = spawn(["sleep", "30"])
    leader = proc.identify(popen.pid)
    assert proc.find_related(leader, spawn.marker) == []


# --- waiting and reaping --------------------------------------------------------------------

def test_wait_gone_returns_survivors_at_deadline(spawn):
    popen = spawn(["sleep", "30"])
    identity = proc.identify(popen.pid)
    start = time.monotonic()
    assert proc.wait_gone([identity], start + 0.2) == [identity]
    assert 0.2 <= time.monotonic() - start < 1


def test_wait_gone_wakes_on_exit_and_reaps_our_child(spawn):
    popen = spawn(["sleep", "30"])
    identity = proc.identify(popen.pid)
    reaped = {}
    proc.send_signal(identity, signal.SIGKILL)
    start = time.monotonic()
    assert proc.wait_gone([identity], start + 2, poll_interval=1, reaped=reaped) == []
    assert time.monotonic() - start < 0.5
    assert reaped == {identity.pid: (None, signal.SIGKILL)}
    assert proc.read_stat(identity.pid) is None


def test_reap_child(spawn):
    popen = spawn(["sh", "-c", "exit 7"])
    assert proc.reap_child(os.getpid()) is None
    wait_for(lambda: proc.read_stat(popen.pid).state == "Z")
    assert proc.reap_child(popen.pid) == (7, None)
    assert proc.reap_child(popen.pid) is None


def test_exit_status_from_returncode():
    assert proc.exit_status_from_returncode(None) == (None, None)
    assert proc.exit_status_from_returncode(3) == (3, None)
    assert proc.exit_status_from_returncode(-9) == (None, 9)


# --- kill_tree ----------------------------------------------------------------------------------

def test_kill_tree_stubborn_tree_needs_sigkill(spawn):
    popen = spawn(["bash", "-c", STUBBORN], ready=True)
    leader = proc.identify(popen.pid)
    wait_for(lambda: escapee_of(leader) and len(children_of(leader.pid)) == 2)
    start = time.monotonic()
    report = proc.kill_tree(leader, spawn.marker, term_grace=0.5, kill_grace=2, popen=popen)
    elapsed = time.monotonic() - start
    assert (report.verified, report.escalated, report.phase) == (True, True, "kill")
    assert report.survivors == [] and report.signal == signal.SIGKILL
    assert ("pgid %d" % leader.pgid, "SIGTERM") in [s[:2] for s in report.signals]
    assert marked_pids(spawn.marker) == []
    assert 0.5 <= elapsed < 1.5


def test_kill_tree_stopped_child_with_term_handler_exits_on_term(spawn):
    popen = spawn([sys.executable, "-c", TERM_HANDLER], ready=True)
    leader = proc.identify(popen.pid)
    proc.send_signal(leader, signal.SIGSTOP)
    wait_for(lambda: proc.read_stat(leader.pid).state == "T")
    report = proc.kill_tree(leader, spawn.marker, term_grace=2, kill_grace=2, popen=popen)
    assert (report.verified, report.phase, report.exit_code) == (True, "term", 0)
    assert [s[1] for s in report.signals] == ["SIGTERM", "SIGCONT"]


def test_kill_tree_stopped_stubborn_member_is_killed(spawn):
    script = "trap '' TERM; sleep 300 & kill -STOP $!; echo ready; wait"
    popen = spawn(["bash", "-c", script], ready=True)
    leader = proc.identify(popen.pid)
    report = proc.kill_tree(leader, spawn.marker, term_grace=0.2, kill_grace=2, popen=popen)
    assert (report.verified, report.phase) == (True, "kill")
    assert marked_pids(spawn.marker) == []


def test_kill_tree_term_handler_exits_in_term_phase(spawn):
    popen = spawn([sys.executable, "-c", TERM_HANDLER], ready=True)
    leader = proc.identify(popen.pid)
    start = time.monotonic()
    report = proc.kill_tree(leader, spawn.marker, term_grace=2, kill_grace=2, popen=popen)
    assert (report.verified, report.escalated, report.phase) == (True, True, "term")
    assert (report.exit_code, report.signal) == (0, None) and popen.returncode == 0
    assert time.monotonic() - start < 1


def test_kill_tree_already_exited_leader_sends_nothing(spawn):
    popen = spawn(["sleep", "30"])
    leader = proc.identify(popen.pid)
    popen.kill()
    wait_for(lambda: proc.read_stat(popen.pid).state == "Z")
    report = proc.kill_tree(leader, spawn.marker, term_grace=1, kill_grace=1, popen=popen)
    assert (report.verified, report.escalated, report.phase) == (True, False, "already_exited")
    assert (report.exit_code, report.signal) == (None, signal.SIGKILL)
    assert report.signals == []


def test_kill_tree_without_popen_reaps_leader_itself(spawn):
    popen = spawn([sys.executable, "-c", TERM_HANDLER], ready=True)
    leader = proc.identify(popen.pid)
    report = proc.kill_tree(leader, None, term_grace=2, kill_grace=2)
    assert (report.verified, report.phase, report.exit_code) == (True, "term", 0)
    assert proc.read_stat(leader.pid) is None


def test_kill_tree_leader_gone_but_orphaned_member_left(spawn):
    popen = spawn(["bash", "-c", "setsid -f sleep 30; echo ready; sleep 0.2"], ready=True)
    leader = proc.identify(popen.pid)
    popen.wait()
    wait_for(lambda: [p for p in marked_pids(spawn.marker) if proc.read_stat(p).session == p])
    report = proc.kill_tree(leader, spawn.marker, term_grace=2, kill_grace=2, popen=popen)
    assert (report.verified, report.escalated, report.phase) == (True, True, "term")
    assert all(target.startswith("pid ") for target, _, _ in report.signals)
    assert marked_pids(spawn.marker) == []


def test_leader_in_our_own_group_is_never_group_signalled(spawn):
    popen = spawn(["sleep", "30"], start_new_session=False)
    sibling = spawn(["sleep", "30"], start_new_session=False)
    leader = proc.identify(popen.pid)
    assert leader.pgid == os.getpgrp() and leader.sid == os.getsid(0)
    assert proc.find_related(leader) == []
    report = proc.kill_tree(leader, None, term_grace=1, kill_grace=1, popen=popen)
    assert (report.verified, report.phase, report.signal) == (True, "term", signal.SIGTERM)
    assert report.signals[0][:2] == (f"pid {leader.pid}", "SIGTERM")
    assert {target for target, _, _ in report.signals} == {f"pid {leader.pid}"}
    assert sibling.poll() is None


@pytest.fixture(params=["pidfd", "no pidfd"])
def pidfds(request, monkeypatch):
    """run_captured reads a child's exit from a pidfd; where there are none (Linux before 5.3, an older seccomp
    profile) it must answer the same through subprocess's own wait."""
    if request.param == "no pidfd":
        def refused(pid):
            raise OSError(38, "Function not implemented")
        monkeypatch.setattr(proc.os, "pidfd_open", refused)
    return request.param


def test_run_captured_answers_as_subprocess_run_does(tmp_path, pidfds):
    given = tmp_path / "given"
    given.write_bytes(b"x" * 300_000)  # more than a pipe holds: read while the child writes
    with open(given, "rb") as stdin:
        done = proc.run_captured(["sh", "-c", "cat; echo said >&2; exit 3"], 10, stdin=stdin, cwd=tmp_path)
    assert (done.returncode, len(done.stdout), done.stderr) == (3, 300_000, b"said\n")


def test_run_captured_kills_a_child_over_its_timeout(tmp_path, pidfds):
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        proc.run_captured(["sleep", "30"], 0.2, start_new_session=True)
    assert time.monotonic() - started < 10
