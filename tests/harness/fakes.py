"""A clock and a process table the tests drive by hand, for the timers and the stop ladder.

They stand in for compozy.clock.Clock and compozy.proc.ProcessTable (same methods); the real ones
are exercised by the real-process tests (tests/unit/test_proc.py, tests/test_stop_and_recovery.py).
"""

import signal
from dataclasses import dataclass, field

from compozy.proc import ProcessIdentity

BOOT = "fake-boot"


class FakeClock:
    def __init__(self, start=1000.0, wall_start=1_700_000_000.0):
        self.now, self.wall_offset = start, wall_start - start

    def monotonic(self):
        return self.now

    def wall(self):
        return self.now + self.wall_offset

    def advance(self, seconds):
        self.now += seconds
        return self.now


@dataclass
class FakeProcess:
    identity: ProcessIdentity
    ppid: int
    survives: frozenset = frozenset()  # signals it lives through (SIGTERM for a stubborn agent)
    on_term: object = None  # called once when SIGTERM reaches it (to fork a child, say)
    alive: bool = True
    received: list = field(default_factory=list)


class FakeProcessTable:
    """Processes that die on the signals they do not survive; waiting moves the clock to the deadline
    when something is still alive at it, and not at all when everything is already gone."""

    def __init__(self, clock, own_pgid=1, own_sid=1):
        self.clock, self.own_pgid, self.own_sid = clock, own_pgid, own_sid
        self.processes = {}
        self.group_signals = []

    def monotonic(self):
        return self.clock.monotonic()

    def spawn(self, pid, pgid=None, sid=None, ppid=1, survives=(), on_term=None):
        identity = ProcessIdentity(pid, 100 + pid, BOOT, pgid or pid, sid or pid)
        self.processes[pid] = FakeProcess(identity, ppid, frozenset(survives), on_term)
        return identity

    def _live(self):
        return [p for p in self.processes.values() if p.alive]

    def related(self, leader, marker):
        family, found = {leader.pid}, True
        while found:
            found = False
            for process in self._live():
                if process.identity.pid not in family and (
                        process.ppid in family or process.identity.pgid == leader.pgid
                        or process.identity.sid == leader.sid):
                    family.add(process.identity.pid)
                    found = True
        return [p.identity for p in self._live() if p.identity.pid in family and p.identity.pid != leader.pid]

    def marked(self, marker):
        return []

    @staticmethod
    def boot():
        return BOOT

    def identify(self, pid):
        process = self.processes.get(pid)
        return process.identity if process is not None and process.alive else None

    def alive(self, identity):
        process = self.processes.get(identity.pid)
        return process is not None and process.alive and process.identity == identity

    def group_of(self, pid):
        process = self.processes.get(pid)
        return process.identity.pgid if process is not None and process.alive else None

    def own_group(self):
        return self.own_pgid

    def signal(self, identity, sig):
        if not self.alive(identity):
            return False
        process = self.processes[identity.pid]
        process.received.append((signal.Signals(sig).name, self.clock.monotonic()))
        if sig == signal.SIGTERM and process.on_term is not None:
            process.on_term(self)
            process.on_term = None
        if sig not in (signal.SIGCONT, 0) and sig not in process.survives:
            process.alive = False
        return True

    def signal_group(self, pgid, sig):
        if pgid <= 1 or pgid == self.own_pgid:
            raise ValueError(f"refusing to signal process group {pgid}")
        members = [p.identity for p in self._live() if p.identity.pgid == pgid]
        self.group_signals.append((pgid, signal.Signals(sig).name))
        for member in members:
            self.signal(member, sig)
        return bool(members)

    def wait_gone(self, identities, deadline, popen=None, reaped=None):
        pending = [i for i in identities if self.alive(i)]
        if pending and self.clock.now < deadline:
            self.clock.now = deadline
        return pending
