"""The catalog's control rows as typed records: prompt admissions, queue entries, permission
interactions, rewind receipts and derivations.

Layer 2. `from_row` takes a row as SQLite holds it (JSON columns as text) and `to_row` gives it back,
so the catalog (compozy.store.catalog, compozy.store.derivations) is the only code that sees a
column; everything above reads attributes. Admissions, rewind receipts and derivations are the
receipts of an idempotent request (compozy.session.records.receipts replays them).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, TypeVar

Row = TypeVar("Row", bound="ControlRow")


def _decoded(text: str | None) -> Any:
    return json.loads(text) if text else None


def _encoded(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


@dataclass
class ControlRow:
    """A row whose JSON_COLUMNS hold JSON text in SQLite and Python values here."""

    JSON_COLUMNS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_row(cls: type[Row], row: Mapping[str, Any]) -> Row:
        values = {name: row.get(name) for name in cls.columns()}
        for name in cls.JSON_COLUMNS:
            values[name] = _decoded(values[name])
        return cls(**values)

    def to_row(self) -> dict[str, Any]:
        row = dataclasses.asdict(self)
        for name in self.JSON_COLUMNS:
            row[name] = _encoded(row[name])
        return row


@dataclass
class Admission(ControlRow):
    """An admitted input (operation prompt, edit or steer) keyed by (session, idempotency_key): the
    receipt a retry answers from."""

    JSON_COLUMNS: ClassVar[tuple[str, ...]] = ("result",)
    id: str
    session_id: str
    operation: str
    idempotency_key: str
    fingerprint: str
    state: str
    message_id: str | None = None
    result: dict | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class QueueEntry(ControlRow):
    """A prompt waiting in a session's durable input queue (or gone through it: its status says)."""

    JSON_COLUMNS: ClassVar[tuple[str, ...]] = ("runtime", "failure")
    id: str
    session_id: str
    status: str
    mode: str
    message: str
    message_id: str
    idempotency_key: str
    turn_id: str
    priority: int = 1  # 0 runs ahead of the FIFO (interrupt and steer replacements)
    runtime: dict | None = None
    admission_id: str | None = None
    failure: dict | None = None
    position: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    budget_override: str | None = None  # the spent budget a person went past (JSON text), for the entry's turn


@dataclass
class Interaction(ControlRow):
    """A permission request an agent asked and a person (or the timeout) answers."""

    JSON_COLUMNS: ClassVar[tuple[str, ...]] = ("payload",)
    id: str
    session_id: str
    kind: str
    status: str
    turn_id: str | None = None
    payload: dict | None = None
    decision: str | None = None
    created_at: str | None = None
    resolved_at: str | None = None


@dataclass
class RewindReceipt(ControlRow):
    """A rewind keyed by (session, idempotency_key): written before the cut, completed after."""

    JSON_COLUMNS: ClassVar[tuple[str, ...]] = ("result",)
    session_id: str
    idempotency_key: str
    fingerprint: str
    state: str
    result: dict | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class Derivation(ControlRow):
    """A continue or fork keyed by (workspace, idempotency_key): one key creates at most one session."""

    JSON_COLUMNS: ClassVar[tuple[str, ...]] = ("result",)
    workspace_id: str
    idempotency_key: str
    fingerprint: str
    kind: str
    source_session_id: str
    child_session_id: str
    state: str
    result: dict | None = None
    created_at: str | None = None
    updated_at: str | None = None
