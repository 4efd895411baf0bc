"""Boot reconciliation: the catalog is rebuilt from the session directories, which it never rewrites.

Layer 4. A directory whose meta.json names an unknown session type or a retired spawn role is
skipped (logged once per daemon run) and never deleted, moved or rewritten. A session the catalog did
not know (compozy.db was lost, or the folder was copied in) gets its usage ledger rows back from its
events.db: one per turn that ended, with the usage its `token_usage` kept.
"""

import json
import logging
import os

from compozy.clock import epoch_from_iso
from compozy.ids import is_valid_id
from compozy.session.records.record import SessionRecord
from compozy.store.ledger import usage_columns
from compozy.store.meta import MetaError, read_meta
from compozy.states import RETIRED_SPAWN_ROLES, SessionType

log = logging.getLogger("compozy.boot")
KNOWN_TYPES = tuple(t.value for t in SessionType)
BATCH = 500  # rows indexed per statement: one statement, not a savepoint per session, and bounded memory


def skip_reason(document):
    if document.get("type") not in KNOWN_TYPES:
        return "unknown_session_type"
    if (document.get("lineage") or {}).get("spawn_role") in RETIRED_SPAWN_ROLES:
        return "retired_spawn_role"
    return None


class Reconciler:
    """Runs once per daemon: index every recoverable directory, orphan what cannot be recovered."""

    def __init__(self, store):
        self.store = store
        self.warned = set()
        self.skipped = {}

    def run(self):
        on_disk, rows, unknown = set(), [], []
        indexed = self.store.catalog.indexed_mtimes()
        sessions_dir = str(self.store.home.sessions_dir)  # plain strings: pathlib cost ~1 s over 10,000 folders
        with self.store.catalog.transaction():  # one commit for the whole index, not one per session
            for name in sorted(self.store.directories()):  # in ID order: the index b-trees grow at their end
                if not is_valid_id(name, "sess"):
                    log.warning("ignoring %s in the sessions folder: not a session ID", name[:80])
                    continue
                on_disk.add(name)
                path = os.path.join(sessions_dir, name, "meta.json")
                mtime = _mtime(path)
                if mtime is None or indexed.get(name) != mtime:  # unchanged files are already indexed
                    found = self._reconcile_directory(name, path, mtime)
                    rows += found
                    unknown += [name] if found and name not in indexed else []
                if len(rows) >= BATCH:
                    self.store.catalog.upsert_sessions(rows)
                    rows = []
            self.store.catalog.upsert_sessions(rows)
        for session_id in set(self.store.catalog.session_ids()) - on_disk:
            log.warning("session %s has a catalog row but no directory; marked orphaned", session_id)
            self.store.catalog.set_orphaned(session_id)
        self.rebuild_ledger(unknown)
        return self.skipped

    def rebuild_ledger(self, session_ids):
        """The ledger rows of sessions the catalog did not know, from their events (a row already there stays)."""
        turns = 0
        for session_id in session_ids:
            try:
                record = self.store.get(session_id)
                for row in ledger_rows(record, self.store.events(record)):
                    self.store.catalog.ledger.record(row)
                    turns += 1
            except Exception:  # noqa: BLE001 (one unreadable store must not stop the boot)
                log.exception("the usage ledger of %s cannot be rebuilt", session_id)
        if turns:
            log.warning("rebuilt %d usage ledger rows of %d sessions the catalog did not know", turns,
                        len(session_ids))

    def _reconcile_directory(self, session_id, path, mtime):
        """The catalog rows to write for one folder: its own, or none (skipped or unrecoverable)."""
        try:
            document = read_meta(path)
            reason = skip_reason(document) if document["id"] == session_id else "id_mismatch"
            if not reason:
                return [self.store.indexable(document, meta_mtime=mtime)]
            self._skip(session_id, document, reason)
        except MetaError as exc:
            log.warning("cannot recover session %s: %s", session_id, exc)
            self._orphan_existing_row(session_id)
        return []

    def _skip(self, session_id, document, reason):
        self.skipped[session_id] = reason
        if session_id not in self.warned:
            self.warned.add(session_id)
            log.warning("observe.session_recovery_skipped session_id=%s session_type=%s spawn_role=%s reason=%s",
                        session_id, document.get("type"), (document.get("lineage") or {}).get("spawn_role"),
                        reason)
        self._orphan_existing_row(session_id)

    def _orphan_existing_row(self, session_id):
        if self.store.catalog.session_flags(session_id):
            self.store.catalog.set_orphaned(session_id)


def ledger_rows(record: SessionRecord, log_) -> list:
    """The usage ledger's rows of a session's ended turns, as the runner recorded them (compozy.session.turns.
    ledger.ledger_row), read back from its events: the user_message (when it started, the runtime that served
    it, a budget override), the terminal event (how and when it ended, archived by a rewind) and the turn's
    usage. The duration is the time between the two events."""
    events = log_.read_all(archive="all", types=["user_message", "done", "error"])
    usage = {entry["turn_id"]: entry["usage"] for entry in log_.usage()}
    started = {e["turn_id"]: e for e in events if e["type"] == "user_message" and e["turn_id"]}
    rows = []
    for event in events:
        opened = started.get(event["turn_id"])
        if event["type"] == "user_message" or opened is None:
            continue
        served = opened["content"].get("effective_runtime") or opened["content"].get("prompt_runtime") or {}
        override = opened["content"].get("budget_override")
        rows.append({"turn_id": event["turn_id"], "session_id": record.id, "workspace_id": record.workspace_id,
                     "agent": event.get("agent_name") or record.agent_name, "provider": served.get("provider"),
                     "model": served.get("model"), "started_at": opened["timestamp"], "ended_at": event["timestamp"],
                     "day": event["timestamp"][:10], "end": event["type"],
                     "duration_ms": _between(opened["timestamp"], event["timestamp"]),
                     "archived": int(bool(event.get("archived"))),
                     "budget_override": json.dumps(override) if override else None,
                     **usage_columns(usage.get(event["turn_id"]))})
        started.pop(event["turn_id"])  # one row per turn: its first terminal event
    return rows


def _between(first, last):
    try:
        return max(0, round((epoch_from_iso(last) - epoch_from_iso(first)) * 1000))
    except (TypeError, ValueError):
        return None


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
