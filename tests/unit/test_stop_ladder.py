"""The signal part of the stop ladder (proc.kill_tree) on a fake clock and a fake process table:
which signal goes where and when, and what counts as verified. The same ladder against real
processes and real signals is in tests/unit/test_proc.py and tests/test_stop_and_recovery.py."""

import pytest

from compozy import proc
from tests.harness.fakes import FakeClock, FakeProcessTable

TERM_GRACE, KILL_GRACE = 5.0, 5.0


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def table(clock):
    return FakeProcessTable(clock)


def _ladder(table, leader):
    return proc.kill_tree(leader, None, TERM_GRACE, KILL_GRACE, processes=table)


def _received(table, pid):
    return [name for name, _ in table.processes[pid].received]


def test_a_leader_already_gone_gets_no_signal(table, clock):
    leader = table.spawn(200)
    table.processes[200].alive = False
    report = _ladder(table, leader)
    assert (report.verified, report.escalated, report.phase) == (True, False, "already_exited")
    assert table.group_signals == [] and clock.now == 1000.0


def test_an_agent_that_honours_term_is_verified_in_the_term_phase_at_once(table, clock):
    leader = table.spawn(200)
    child = table.spawn(201, pgid=200, sid=200, ppid=200)
    report = _ladder(table, leader)
    assert (report.verified, report.escalated, report.phase) == (True, True, "term")
    assert table.group_signals == [(200, "SIGTERM"), (200, "SIGCONT")]  # the group, never pid by pid
    assert not table.alive(child) and clock.now == 1000.0  # nobody waited for a grace


def test_an_agent_ignoring_term_is_killed_when_the_term_grace_is_over(table, clock):
    leader = table.spawn(200, survives={proc.signal.SIGTERM})
    report = _ladder(table, leader)
    assert (report.verified, report.phase) == (True, "kill")
    assert [(name, at - 1000.0) for name, at in table.processes[200].received] == [
        ("SIGTERM", 0.0), ("SIGCONT", 0.0), ("SIGKILL", TERM_GRACE)]
    assert clock.now == 1000.0 + TERM_GRACE


def test_a_process_no_signal_ends_is_reported_unverified_after_both_graces(table, clock):
    leader = table.spawn(200, survives={proc.signal.SIGTERM, proc.signal.SIGKILL})
    report = _ladder(table, leader)
    assert (report.verified, report.phase) == (False, "unverified")
    assert report.survivors == [leader] and clock.now == 1000.0 + TERM_GRACE + KILL_GRACE


def test_a_child_forked_while_the_tree_dies_is_found_and_killed(table, clock):
    escapee = {}

    def fork(processes):  # on SIGTERM the leader forks a child into a session of its own
        escapee["identity"] = processes.spawn(300, pgid=300, sid=300, ppid=200, survives={proc.signal.SIGTERM})

    leader = table.spawn(200, on_term=fork)
    report = _ladder(table, leader)
    assert (report.verified, report.phase) == (True, "kill")
    assert _received(table, 300) == ["SIGKILL"]  # reached by pid: it left the group
    assert not table.alive(escapee["identity"])


def test_the_daemons_own_group_is_never_signalled(table, clock):
    table.own_pgid = 200  # an agent that stayed in the daemon's group
    leader = table.spawn(200, pgid=200)
    report = _ladder(table, leader)
    assert report.verified and table.group_signals == []
    assert _received(table, 200) == ["SIGTERM"]  # pid by pid; SIGCONT finds it gone


def test_a_group_whose_members_are_all_gone_is_not_signalled_as_a_group(table, clock):
    """Its number may belong to someone else now: only a live leader or member proves it is ours."""
    leader = table.spawn(200, pgid=200)
    table.processes[200].alive = False
    straggler = table.spawn(201, pgid=999, sid=200, ppid=1)  # left the group, still in the session
    report = _ladder(table, leader)
    assert report.verified and table.group_signals == []
    assert _received(table, 201) == ["SIGTERM"] and not table.alive(straggler)
