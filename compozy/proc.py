"""Linux process identity, liveness proof, the signal part of the stop ladder, and starting the
daemon's children (agents, hooks) in process groups of their own: the one module that starts or
signals a process (checked by tests/unit/test_owners.py).

A process is named by (pid, start_time, boot_id) so a recycled pid is never mistaken for it.
"""
from __future__ import annotations

import functools
import math
import os
import select
import selectors
import signal
import subprocess
import time

from compozy.process_records import KillReport, ProcessIdentity, ProcStat  # noqa: F401 (imported from here too)


@functools.cache
def boot_id() -> str:
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def read_stat(pid: int) -> ProcStat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        # comm (field 2) may contain spaces and ")": fields start after the LAST ")".
        rest = data[data.rindex(b")") + 2:].split()
        ppid, pgrp, session, start_time = (int(rest[i]) for i in (1, 2, 3, 19))
        return ProcStat(pid, rest[0].decode(), ppid, pgrp, session, start_time)
    except (OSError, ValueError, IndexError):
        return None


def _is_dead(stat: ProcStat) -> bool:
    if stat.state != "Z":
        return stat.state in ("X", "x")
    # A main thread that called pthread_exit shows "Z" while other threads still run.
    try:
        return len(os.listdir(f"/proc/{stat.pid}/task")) <= 1
    except OSError:
        return True


def _identity_of(stat: ProcStat) -> ProcessIdentity:
    return ProcessIdentity(stat.pid, stat.start_time, boot_id(), stat.pgrp, stat.session)


def identify(pid: int) -> ProcessIdentity | None:
    stat = read_stat(pid)
    return None if stat is None or _is_dead(stat) else _identity_of(stat)


def is_alive(identity: ProcessIdentity) -> bool:
    current = identify(identity.pid) if identity.boot_id == boot_id() else None
    return current is not None and current.start_time == identity.start_time


def open_pidfd(identity: ProcessIdentity) -> int | None:
    try:
        fd = os.pidfd_open(identity.pid)
    except OSError:
        return None
    # Checking after the open pins the incarnation: the fd cannot follow a reused pid.
    if not is_alive(identity):
        os.close(fd)
        return None
    return fd


def send_signal(identity: ProcessIdentity, sig: int) -> bool:
    fd = open_pidfd(identity)
    if fd is None:
        return False
    try:
        signal.pidfd_send_signal(fd, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        os.close(fd)


def start_group(argv, cwd=None, env=None, stderr=subprocess.PIPE, bufsize=0) -> subprocess.Popen:
    """A child leading a new session and process group, its stdin and stdout piped: the ladder (or
    kill_group) can signal it whole without touching the daemon's own group."""
    return subprocess.Popen(argv, bufsize=bufsize, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                            cwd=cwd, env=env, start_new_session=True)


def run_captured(argv, timeout, clock=time.monotonic, **options) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True, timeout=timeout) without its polling wait (sleeps of 1, 2, 4 ms...
    once the pipes close: ~1 ms a call): the exit is read from a pidfd beside the pipes; on timeout, killed.
    Where there are no pidfds (Linux before 5.3, an older seccomp profile) it is subprocess's own wait."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **options) as child:
        try:
            output = _read_until_exit(child, timeout, clock)
        except subprocess.TimeoutExpired:
            child.kill()
            raise
        return subprocess.CompletedProcess(argv, child.wait(), *output)


def _read_until_exit(child, timeout, clock) -> tuple[bytes, bytes]:
    try:
        pidfd = os.pidfd_open(child.pid)
    except (OSError, AttributeError):
        return child.communicate(timeout=timeout)
    deadline, out = clock() + timeout, dict[object, list[bytes]]()
    try:
        with selectors.DefaultSelector() as selector:
            for source in (pidfd, child.stdout, child.stderr):  # the pipes are there: PIPE asked for them
                selector.register(source, selectors.EVENT_READ, out.setdefault(source, []))
            while selector.get_map():
                if clock() >= deadline:
                    raise subprocess.TimeoutExpired(child.args, timeout)
                for key, _ in selector.select(deadline - clock()):
                    key.data.append(chunk := b"" if key.fileobj == pidfd else os.read(key.fd, 1 << 16))
                    if not chunk:  # a pipe closed, or the child exited
                        selector.unregister(key.fileobj)
    finally:
        os.close(pidfd)
    return b"".join(out[child.stdout]), b"".join(out[child.stderr])


def kill_group(leader_pid: int) -> bool:
    """SIGKILL the group a start_group child leads; False when it is gone (or not ours to signal)."""
    try:
        return signal_group(leader_pid, signal.SIGKILL)
    except PermissionError:
        return False


def signal_group(pgid: int, sig: int) -> bool:
    # killpg(0) or our own group would signal the daemon itself.
    if pgid <= 1 or pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}")
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False


def _scan() -> dict[int, ProcStat]:
    stats = (read_stat(int(name)) for name in os.listdir("/proc") if name.isdigit())
    return {stat.pid: stat for stat in stats if stat is not None}


def _has_env_entry(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return entry in f.read().split(b"\0")
    except OSError:
        return False


def _matcher(leader: ProcessIdentity, stats: dict[int, ProcStat], marker: str | None):
    # A pid number in use as a pgid/sid is never reallocated, so a new incarnation at the
    # leader's pid means its old group and session are empty and the numbers may be others'.
    current = stats.get(leader.pid)
    trusted = current is None or current.start_time == leader.start_time
    # The daemon's own group/session would match its siblings, not the agent's tree.
    pgid = leader.pgid if trusted and leader.pgid != os.getpgrp() else None
    sid = leader.sid if trusted and leader.sid != os.getsid(0) else None
    entry = marker.encode() if marker else None

    def matches(stat: ProcStat) -> bool:
        if stat.pgrp == pgid or stat.session == sid:
            return True
        return entry is not None and _has_env_entry(stat.pid, entry)
    return matches


def _descendants(roots: set[int], stats: dict[int, ProcStat]) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in stats.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, todo = set(roots), list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def find_related(leader: ProcessIdentity, marker: str | None = None) -> list[ProcessIdentity]:
    if leader.boot_id != boot_id():
        return []
    me = os.getpid()
    stats = {pid: s for pid, s in _scan().items()
             if s.start_time >= leader.start_time and pid != me and not _is_dead(s)}
    matches = _matcher(leader, stats, marker)
    roots = {pid for pid, s in stats.items() if matches(s)}
    if (now := stats.get(leader.pid)) is not None and now.start_time == leader.start_time:
        roots.add(leader.pid)
    related = _descendants(roots, stats) - {leader.pid}
    return [_identity_of(stats[pid]) for pid in sorted(related)]


def find_marked(marker: str) -> list[ProcessIdentity]:
    """Every live process (not us) whose environment holds the exact NAME=VALUE marker."""
    entry, me = marker.encode(), os.getpid()
    return [_identity_of(s) for pid, s in sorted(_scan().items())
            if pid != me and not _is_dead(s) and _has_env_entry(pid, entry)]


def reap_child(pid: int) -> tuple[int | None, int | None] | None:
    try:
        reaped, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    if reaped != pid:
        return None
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return os.WEXITSTATUS(status), None


def _gone(identity: ProcessIdentity, popen, reaped: dict | None) -> bool:
    """True when identity is dead; reaps it first when it is our zombie child."""
    if is_alive(identity):
        return False
    if popen is not None and popen.pid == identity.pid:
        popen.poll()  # Popen must reap its own child or it loses the exit status
        return True
    stat = read_stat(identity.pid)
    if stat is not None and stat.state == "Z" and stat.start_time == identity.start_time:
        result = reap_child(identity.pid)
        if result is not None and reaped is not None:
            reaped[identity.pid] = result
    return True


def wait_gone(identities: list[ProcessIdentity], deadline: float, poll_interval: float = 0.01,
              *, popen=None, reaped: dict | None = None,
              clock=time.monotonic) -> list[ProcessIdentity]:
    pending = list(dict.fromkeys(identities))
    fds: dict[ProcessIdentity, int] = {}
    try:
        while True:
            pending = [i for i in pending if not _gone(i, popen, reaped)]
            remaining = deadline - clock()
            if not pending or remaining <= 0:
                return pending
            poller = select.poll()
            for identity in pending:
                if identity not in fds and (fd := open_pidfd(identity)) is not None:
                    fds[identity] = fd
                if identity in fds:
                    poller.register(fds[identity], select.POLLIN)
                else:  # no pidfd: it just died (re-check now) or pidfds are unavailable
                    remaining = min(remaining, poll_interval if is_alive(identity) else 0)
            poller.poll(math.floor(remaining * 1000))
    finally:
        for fd in fds.values():
            os.close(fd)


def exit_status_from_returncode(returncode: int | None) -> tuple[int | None, int | None]:
    if returncode is not None and returncode < 0:
        return None, -returncode
    return returncode, None


class ProcessTable:
    """This machine's processes as the stop ladder sees them: who belongs to an agent, who is still
    alive, signals, and waiting for exits, on one monotonic clock. LINUX reads /proc and signals
    through pidfds; unit tests of the ladder substitute a table of their own with the same methods."""

    related = staticmethod(find_related)
    marked = staticmethod(find_marked)
    alive = staticmethod(is_alive)
    identify = staticmethod(identify)
    boot = staticmethod(boot_id)
    signal = staticmethod(send_signal)
    signal_group = staticmethod(signal_group)
    own_group = staticmethod(os.getpgrp)

    def __init__(self, clock=time.monotonic):
        self.monotonic = clock

    @staticmethod
    def group_of(pid: int) -> int | None:
        stat = read_stat(pid)
        return stat.pgrp if stat is not None else None

    def wait_gone(self, identities, deadline: float, popen=None, reaped: dict | None = None):
        return wait_gone(identities, deadline, popen=popen, reaped=reaped, clock=self.monotonic)


LINUX = ProcessTable()


class _Ladder:
    """State shared by the kill_tree steps: what was signalled, when, and who is still there."""

    def __init__(self, leader, popen, processes):
        self.leader, self.popen, self.processes = leader, popen, processes
        self.report = KillReport()
        self.reaped: dict[int, tuple[int | None, int | None]] = {}

    def log(self, target: str, sig: int, delivered: bool) -> None:
        if delivered:
            self.report.signals.append((target, signal.Signals(sig).name, self.processes.monotonic()))
            self.report.escalated = True

    def group_is_ours(self, members) -> bool:
        # Only a live leader or live member still in the group proves the pgid was not reused.
        if self.leader.pgid in (0, 1, self.processes.own_group()):
            return False
        alive = self.processes.alive
        return alive(self.leader) or any(self._in_group(m) and alive(m) for m in members)

    def _in_group(self, member: ProcessIdentity) -> bool:
        return self.processes.group_of(member.pid) == self.leader.pgid

    def signal_all(self, members, sigs) -> None:
        use_group = self.group_is_ours(members)
        for sig in sigs:
            if use_group:
                self.log(f"pgid {self.leader.pgid}", sig, self.processes.signal_group(self.leader.pgid, sig))
            for m in [self.leader, *members]:
                if not (use_group and self._in_group(m)):
                    self.log(f"pid {m.pid}", sig, self.processes.signal(m, sig))

    def wait(self, identities, grace: float) -> list[ProcessIdentity]:
        return self.processes.wait_gone(identities, self.processes.monotonic() + grace, popen=self.popen,
                                        reaped=self.reaped)

    def finish(self, phase: str, survivors) -> KillReport:
        report = self.report
        report.survivors, report.verified = list(survivors), not survivors
        report.phase = "unverified" if survivors else phase
        if self.popen is not None:
            self.popen.poll()
            report.exit_code, report.signal = exit_status_from_returncode(self.popen.returncode)
        else:
            report.exit_code, report.signal = self.reaped.get(self.leader.pid, (None, None))
        return report


def kill_tree(leader: ProcessIdentity, marker: str | None, term_grace: float, kill_grace: float,
              popen=None, processes: ProcessTable = LINUX) -> KillReport:
    """The signal part of the stop ladder: SIGTERM+SIGCONT to the tree, term_grace, then SIGKILL
    to whatever is left or was forked meanwhile, kill_grace; verified only when nothing survives."""
    ladder = _Ladder(leader, popen, processes)
    members = processes.related(leader, marker)
    if not ladder.wait([leader, *members], 0):
        return ladder.finish("already_exited", [])
    ladder.signal_all(members, (signal.SIGTERM, signal.SIGCONT))
    pending = ladder.wait([leader, *members], term_grace)
    phase, deadline = "term", processes.monotonic() + kill_grace
    seen = {leader, *members}
    while True:
        # Rescan each round: members may have forked or escaped while being signalled.
        fresh = [m for m in processes.related(leader, marker) if m not in seen]
        if not fresh and not pending:
            return ladder.finish(phase, [])
        seen.update(fresh)
        phase, targets = "kill", [*pending, *fresh]
        ladder.signal_all([t for t in targets if t != leader], (signal.SIGKILL,))
        pending = ladder.wait(targets, max(0.0, deadline - processes.monotonic()))
        if pending or processes.monotonic() >= deadline:
            return ladder.finish(phase, pending)
