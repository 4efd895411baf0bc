"""SessionRecord and RuntimeRecord: a session's durable metadata, typed, and its one serialisation.

Layer 4. to_dict() is what meta.json holds (store.meta adds the schema) and what the catalog
indexes; from_dict() reads it back. Keys this version does not know are kept as they were, and
the keys written only once they have a value (activity, stopped_at, a route) stay absent until then.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from compozy.states import RuntimeStatus, SessionState


class _Absent:
    """An optional key not written yet: left out of to_dict(), false in a test."""

    def __bool__(self):
        return False

    def __repr__(self):
        return "ABSENT"


ABSENT: Any = _Absent()  # typed Any: it stands for a field that may hold any value
META_ONLY = ("schema",)  # the file format's own stamp: store.meta writes it


@dataclass
class RuntimeRecord:
    status: str = RuntimeStatus.UNBOUND.value
    transition: str = ""
    generation: int = 0
    selected: dict | None = None
    selection_revision: int = 0
    effective: dict | None = None
    last_known: dict | None = None
    acp_session_id: str | None = None
    process: dict | None = None  # the agent's identity (pid, start_time, boot_id, pgid, sid)
    recovery: dict | None = None
    route: object = ABSENT  # the fallback route accepted (a number, or null for the only one), once bound
    commands: object = ABSENT  # the agent's slash commands as it last announced them (available_commands_update)
    extra: dict = field(default_factory=dict, repr=False)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        return {**_known(self, RUNTIME_KEYS), **self.extra}

    @classmethod
    def from_dict(cls, document):
        document = dict(document or {})
        return cls(**{name: document.pop(name) for name in RUNTIME_KEYS if name in document}, extra=document)


RUNTIME_KEYS = ("status", "transition", "generation", "selected", "selection_revision", "effective", "last_known",
                "acp_session_id", "process", "recovery", "route", "commands")


@dataclass
class SessionRecord:
    id: str
    type: str
    agent_name: str
    workspace_id: str
    cwd: str
    created_at: str
    updated_at: str
    name: str | None = None
    state: str = SessionState.ACTIVE.value
    archived: bool = False
    archived_at: str | None = None
    lineage: dict = field(default_factory=dict)
    runtime: RuntimeRecord = field(default_factory=RuntimeRecord)
    fences: dict = field(default_factory=lambda: {"epoch": 0, "generation": 0})
    stop_reason: str | None = None
    stop_detail: str | None = None
    failure: dict | None = None
    attention: str | None = None
    escalated: bool = False
    verified: bool | None = None
    activity: dict | None = ABSENT  # the last activity, once a turn ended
    stopped_at: str | None = ABSENT  # when the last verified stop completed
    derivation: dict | None = ABSENT  # a continued or forked session: where it came from and how
    extra: dict = field(default_factory=dict, repr=False)

    def to_dict(self):
        return {**_known(self, SESSION_KEYS), "runtime": self.runtime.to_dict(), **self.extra}

    @classmethod
    def from_dict(cls, document):
        document = {k: v for k, v in document.items() if k not in META_ONLY}
        known = {name: document.pop(name) for name in SESSION_KEYS if name in document}
        known["runtime"] = RuntimeRecord.from_dict(known.get("runtime"))
        return cls(**known, extra=document)

    def change(self, **changes):
        """Set known fields (an unknown name is a bug, never stored)."""
        for name, value in changes.items():
            if name not in FIELDS:
                raise AttributeError(f"SessionRecord has no field {name!r}")
            setattr(self, name, value)


SESSION_KEYS = ("id", "name", "type", "agent_name", "workspace_id", "cwd", "state", "created_at", "updated_at",
                "archived", "archived_at", "lineage", "runtime", "fences", "stop_reason", "stop_detail", "failure",
                "attention", "escalated", "verified", "activity", "stopped_at", "derivation")
FIELDS = frozenset(SESSION_KEYS) - {"id"}


def _known(record, names):
    """The fields in the order meta.json has always listed them, without the ones still ABSENT."""
    return {name: value for name in names if (value := getattr(record, name)) is not ABSENT}
