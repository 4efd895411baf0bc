"""The catalog's record of derived work (compozy.db): rewind receipts and derivations.

Layer 2. A rewind receipt is keyed by (session, idempotency_key); a derivation by (workspace,
idempotency_key), so one key creates at most one session. Both keep their outcome as JSON for
retries, and a state the domain moves along its table (compozy.states) with a compare-and-set.
"""

from __future__ import annotations

import json
from typing import Any

from peewee import CharField, CompositeKey, Model, TextField

from compozy.clock import now_iso
from compozy.store.records import Derivation, RewindReceipt


def make_models(db):
    class Base(Model):
        class Meta:
            database = db

    class RewindReceipt(Base):
        session_id = CharField()
        idempotency_key = CharField()
        fingerprint = CharField()
        state = CharField()
        result = TextField()
        created_at = CharField()
        updated_at = CharField()

        class Meta:
            table_name = "rewind_receipts"
            primary_key = CompositeKey("session_id", "idempotency_key")

    class Derivation(Base):
        workspace_id = CharField()
        idempotency_key = CharField()
        fingerprint = CharField()
        kind = CharField()
        source_session_id = CharField()
        child_session_id = CharField(index=True)
        state = CharField()
        result = TextField(null=True)
        created_at = CharField()
        updated_at = CharField()

        class Meta:
            table_name = "derivations"
            primary_key = CompositeKey("workspace_id", "idempotency_key")

    return RewindReceipt, Derivation


class Derived:
    """The two tables, on the catalog's connection and lock (compozy.store.catalog)."""

    def __init__(self, guard):
        self.guard = guard
        self.RewindReceipt, self.Derivation = make_models(guard.db)
        with guard.write() as db:
            db.create_tables([self.RewindReceipt, self.Derivation])

    # -- rewind receipts ----------------------------------------------------------------------

    def rewind(self, session_id: str, key: str) -> RewindReceipt | None:
        R = self.RewindReceipt
        with self.guard.read():
            row = R.get_or_none((R.session_id == session_id) & (R.idempotency_key == key))
        return row and RewindReceipt.from_row(row.__data__)

    def add_rewind(self, receipt: RewindReceipt) -> None:
        stamp = now_iso()
        with self.guard.write():
            self.RewindReceipt.create(**{**receipt.to_row(), "created_at": stamp, "updated_at": stamp})

    def move_rewind(self, session_id: str, key: str, old: str, new: str) -> int:
        R = self.RewindReceipt
        with self.guard.write():
            return R.update(state=new, updated_at=now_iso()).where(
                (R.session_id == session_id) & (R.idempotency_key == key) & (R.state == old)).execute()

    def rewinds_in_state(self, state: str) -> list[RewindReceipt]:
        R = self.RewindReceipt
        with self.guard.read():
            return [RewindReceipt.from_row(r.__data__) for r in R.select().where(R.state == state)]

    def forget_session(self, session_id):
        """A removed session's receipts go with it (its derivations stay: they answer child_deleted)."""
        R = self.RewindReceipt
        with self.guard.write():
            R.delete().where(R.session_id == session_id).execute()

    # -- derivations ------------------------------------------------------------------------------

    def derivation(self, workspace_id: str, key: str) -> Derivation | None:
        D = self.Derivation
        with self.guard.read():
            row = D.get_or_none((D.workspace_id == workspace_id) & (D.idempotency_key == key))
        return row and Derivation.from_row(row.__data__)

    def add_derivation(self, derivation: Derivation) -> None:
        stamp = now_iso()
        with self.guard.write():
            self.Derivation.create(**{**derivation.to_row(), "created_at": stamp, "updated_at": stamp})

    def update_derivation(self, workspace_id: str, key: str, expected_state: str | None = None, **fields: Any) -> int:
        """Rows changed (0 when the derivation is gone or not in expected_state)."""
        D = self.Derivation
        if "result" in fields:
            fields["result"] = json.dumps(fields["result"])
        where = (D.workspace_id == workspace_id) & (D.idempotency_key == key)
        if expected_state is not None:
            where &= D.state == expected_state
        with self.guard.write():
            return D.update(updated_at=now_iso(), **fields).where(where).execute()

    def delete_derivation(self, workspace_id: str, key: str, expected_state: str) -> int:
        D = self.Derivation
        with self.guard.write():
            return D.delete().where((D.workspace_id == workspace_id) & (D.idempotency_key == key)
                                    & (D.state == expected_state)).execute()

    def derivations_in_state(self, state: str) -> list[Derivation]:
        D = self.Derivation
        with self.guard.read():
            return [Derivation.from_row(r.__data__) for r in D.select().where(D.state == state)]
