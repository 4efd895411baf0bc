"""What an agent's recorded process identity proves when no runtime of this daemon holds the process.

Layer 4. A stop (or boot) that finds `runtime.process` in a session's record must prove that process
gone before it publishes `stopped`. Only both identity fields cleared (no pid, no start time) needs
no proof. A complete identity goes through the signal ladder as it is; a partial one (as an older
version or a hand-edited meta.json leaves it) is completed where the facts allow and otherwise
reported unproven, and an unproven process is never signalled: it might be someone else's.
"""

from dataclasses import dataclass

from compozy import proc


@dataclass(frozen=True)
class Recorded:
    leader: proc.ProcessIdentity | None = None  # run the ladder on this identity
    unproven: str | None = None  # exit cannot be proven, and nothing may be signalled: why

    @property
    def gone(self):
        return self.leader is None and self.unproven is None


def read_recorded(recorded, processes):
    """The verdict on a recorded identity (a dict from meta.json, possibly partial or None)."""
    recorded = recorded if isinstance(recorded, dict) else {}
    full = proc.ProcessIdentity.from_dict(recorded)
    if full is not None:
        return Recorded(leader=full)
    pid, start = _number(recorded.get("pid")), _number(recorded.get("start_time"))
    if pid is None and start is None:
        return Recorded()  # both identity fields cleared: nothing was recorded to prove
    boot = recorded.get("boot_id")
    if isinstance(boot, str) and boot and boot != processes.boot():
        return Recorded()  # recorded during an earlier boot: no process of it lives
    if pid is None or pid <= 1:
        return Recorded(unproven=f"partial process identity without a pid ({_fields(recorded)})")
    # compozy starts every agent as the leader of its own session and process group.
    group, session = _number(recorded.get("pgid")) or pid, _number(recorded.get("sid")) or pid
    if start is not None:
        return Recorded(leader=proc.ProcessIdentity(pid, start, processes.boot(), group, session))
    unknown = proc.ProcessIdentity(pid, 0, processes.boot(), group, session)
    if processes.identify(pid) is None and not processes.related(unknown, None):
        return Recorded()  # nothing has that pid, nor is left in its group or session
    return Recorded(unproven=f"partial process identity: pid {pid} is recorded without its start time and a "
                             f"process with that pid or in its group is alive; it cannot be proven to be the agent")


def prove_exit(recorded, processes, term_grace, kill_grace):
    """(KillReport, why it is unverified or None): the ladder on what the record identifies, or the
    verdict alone when there is nothing to signal."""
    verdict = read_recorded(recorded, processes)
    if verdict.unproven is not None:
        return proc.KillReport(), verdict.unproven
    leader = verdict.leader
    if verdict.gone or (not processes.alive(leader) and not processes.related(leader, None)):
        return proc.KillReport(verified=True, phase="already_exited"), None
    report = proc.kill_tree(leader, None, term_grace, kill_grace, processes=processes)
    survivors = ", ".join(f"pid {s.pid}" for s in report.survivors) or "exit not proven"
    return report, None if report.verified else survivors


def _number(value):
    if isinstance(value, bool):
        return None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _fields(recorded):
    return ", ".join(sorted(k for k, v in recorded.items() if v not in (None, ""))) or "no fields"
