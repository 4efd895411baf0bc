"""PID reuse: the stop ladder never signals a process whose start time differs from the recorded
identity (issue 9). Real processes and real signals: the "reused" process is a live process group
(a leader in a session of its own, with a child in its group) that records every signal it catches,
and the ladder is handed an identity with its pid, pgid and sid but another start time, as a crashed
agent's record reads once the kernel has given its pid to someone else."""

import dataclasses
import os
import signal
import subprocess
import sys
import time

import pytest

from compozy import proc
from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home

# Records every catchable signal it receives, then keeps running: a delivered SIGTERM, SIGCONT or
# SIGINT would show in its output, a SIGKILL would end it.
RECORDER = """
import signal, sys, time, os
def note(number, frame):
    sys.stdout.write(f"{os.getpid()} {signal.Signals(number).name}\\n"); sys.stdout.flush()
for sig in (signal.SIGTERM, signal.SIGCONT, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, note)
if len(sys.argv) > 1:
    import subprocess
    subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=sys.stdout)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def reused(tmp_path):
    """A live group (leader + child) and the identity a dead agent had at the leader's pid."""
    log = tmp_path / "signals.log"
    with open(log, "w") as out:
        leader = subprocess.Popen([sys.executable, "-c", RECORDER, RECORDER], stdout=out, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while log.read_text().count("ready") < 2:
            assert time.monotonic() < deadline, "the recorder group did not start"
            time.sleep(0.02)
        live = proc.identify(leader.pid)
        child = next(i for i in map(proc.identify, _children(leader.pid)) if i is not None)
        recorded = dataclasses.replace(live, start_time=live.start_time - 1)  # the earlier incarnation
        yield recorded, live, child, log
    finally:
        try:
            os.killpg(leader.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        leader.wait(10)


def _children(pid):
    found = []
    for name in os.listdir("/proc"):
        stat = proc.read_stat(int(name)) if name.isdigit() else None
        if stat is not None and stat.ppid == pid:
            found.append(stat.pid)
    return found


def _signals_received(log):
    return [line for line in log.read_text().splitlines() if line != "ready"]


def test_the_ladder_sends_nothing_to_a_group_now_led_by_a_new_incarnation_of_the_pid(reused):
    recorded, live, child, log = reused
    assert (recorded.pid, recorded.pgid, recorded.sid) == (live.pid, live.pgid, live.sid)
    report = proc.kill_tree(recorded, None, 0.5, 0.5)
    assert (report.verified, report.escalated, report.phase, report.signals) == (True, False, "already_exited", [])
    time.sleep(0.3)  # a signal in flight would have been caught and logged by now
    assert _signals_received(log) == []
    assert proc.is_alive(live) and proc.is_alive(child)


def test_the_ladder_finds_no_relatives_through_a_reused_pid(reused):
    recorded, _, _, _ = reused
    assert proc.find_related(recorded, None) == []
    assert not proc.is_alive(recorded) and proc.open_pidfd(recorded) is None
    assert proc.send_signal(recorded, signal.SIGTERM) is False


def test_a_stop_of_a_session_whose_recorded_agent_pid_was_reused_leaves_the_new_process_alone(reused, tmp_path):
    recorded, live, child, log = reused
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    manager = SessionManager(Home(home), from_document({})).start()
    try:
        session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
        session = manager._session(session_id)  # the live session the stop will act on
        with session.lock:  # an earlier attempt recorded this agent, then lost it
            session.record.runtime = session.record.runtime.replace(process=recorded.to_dict())
        document = manager.stop_session(session_id, None, {"wait": True})
        assert document["state"] == "stopped" and document["verified"] is True, document
        assert document["escalated"] is False, document
    finally:
        manager.shutdown()
    time.sleep(0.3)
    assert _signals_received(log) == []
    assert proc.is_alive(live) and proc.is_alive(child)

