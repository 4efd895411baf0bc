"""What the daemon records of a process: its /proc stat line, its identity (pid, start_time, boot_id, so a
recycled pid is never mistaken for it) and a stop ladder's report. Data only; compozy/proc.py reads and
signals the processes."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class ProcStat:
    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start_time: int


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    start_time: int
    boot_id: str
    pgid: int
    sid: int

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d) -> ProcessIdentity | None:
        try:
            boot = d["boot_id"]
            if isinstance(boot, str) and boot:
                return cls(int(d["pid"]), int(d["start_time"]), boot, int(d["pgid"]), int(d["sid"]))
        except (TypeError, KeyError, ValueError):
            pass
        return None


@dataclass
class KillReport:
    verified: bool = False
    escalated: bool = False
    phase: str = "unverified"
    signals: list[tuple[str, str, float]] = field(default_factory=list)
    survivors: list[ProcessIdentity] = field(default_factory=list)
    exit_code: int | None = None
    signal: int | None = None
