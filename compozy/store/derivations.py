"""The catalog's record of derived work (compozy.db): rewind receipts and derivations.

Layer 2. A rewind receipt is keyed by (session, idempotency_key); a derivation by (workspace,
idempotency_key), so one key creates at most one session. Both keep their outcome as JSON for
retries, and a state the domain moves along its table (compozy.states) with a compare-and-set.
"""

import json

from peewee import CharField, CompositeKey, Model, TextField

from compozy.clock import now_iso


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


def _row(row):
    data = dict(row.__data__)
    data["result"] = json.loads(data["result"]) if data.get("result") else None
    return data


class Derived:
    """The two tables, on the catalog's connection and lock (compozy.store.catalog)."""

    def __init__(self, guard):
        self.guard = guard
        self.RewindReceipt, self.Derivation = make_models(guard.db)
        with guard.write() as db:
            db.create_tables([self.RewindReceipt, self.Derivation])

    # -- rewind receipts ----------------------------------------------------------------------

    def rewind(self, session_id, key):
        R = self.RewindReceipt
        with self.guard.read():
            row = R.get_or_none((R.session_id == session_id) & (R.idempotency_key == key))
        return row and _row(row)

    def add_rewind(self, session_id, key, fingerprint, state, result):
        stamp = now_iso()
        with self.guard.write():
            self.RewindReceipt.create(session_id=session_id, idempotency_key=key, fingerprint=fingerprint,
                                      state=state, result=json.dumps(result), created_at=stamp, updated_at=stamp)

    def move_rewind(self, session_id, key, old, new):
        R = self.RewindReceipt
        with self.guard.write():
            return R.update(state=new, updated_at=now_iso()).where(
                (R.session_id == session_id) & (R.idempotency_key == key) & (R.state == old)).execute()

    def rewinds_in_state(self, state):
        R = self.RewindReceipt
        with self.guard.read():
            return [_row(r) for r in R.select().where(R.state == state)]

    def forget_session(self, session_id):
        """A removed session's receipts go with it (its derivations stay: they answer child_deleted)."""
        R = self.RewindReceipt
        with self.guard.write():
            R.delete().where(R.session_id == session_id).execute()

    # -- derivations ------------------------------------------------------------------------------

    def derivation(self, workspace_id, key):
        D = self.Derivation
        with self.guard.read():
            row = D.get_or_none((D.workspace_id == workspace_id) & (D.idempotency_key == key))
        return row and _row(row)

    def add_derivation(self, **fields):
        stamp = now_iso()
        fields["result"] = json.dumps(fields["result"]) if fields.get("result") is not None else None
        with self.guard.write():
            self.Derivation.create(created_at=stamp, updated_at=stamp, **fields)

    def update_derivation(self, workspace_id, key, expected_state=None, **fields):
        """Rows changed (0 when the derivation is gone or not in expected_state)."""
        D = self.Derivation
        if "result" in fields:
            fields["result"] = json.dumps(fields["result"])
        where = (D.workspace_id == workspace_id) & (D.idempotency_key == key)
        if expected_state is not None:
            where &= D.state == expected_state
        with self.guard.write():
            return D.update(updated_at=now_iso(), **fields).where(where).execute()

    def delete_derivation(self, workspace_id, key, expected_state):
        D = self.Derivation
        with self.guard.write():
            return D.delete().where((D.workspace_id == workspace_id) & (D.idempotency_key == key)
                                    & (D.state == expected_state)).execute()

    def derivations_in_state(self, state):
        D = self.Derivation
        with self.guard.read():
            return [_row(r) for r in D.select().where(D.state == state)]
