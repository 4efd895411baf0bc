"""Retention ([retention] in config.toml) and the disk budget (storage.max_bytes): never silent.

Layer 4. The policy compacts sessions archived N days ago (store/compaction.py, each chunk run's joined
text redacted), deletes sessions archived M days ago (off by default; each deletion is logged with the
session IDs), rotates the daemon's log past its size and removes rotated logs and crash bundles by age and
total size. Nothing that is not archived is ever compacted or deleted. A dry run answers the same plan and
changes nothing. The Keeper runs the policy and checks the budget every retention.interval: at 90% of
storage.max_bytes it raises the daemon's storage_budget attention item (and deletes nothing for it).
"""

import logging
import os
import threading
from datetime import datetime, timezone

from compozy import validate as v
from compozy.clock import now_iso
from compozy.errors import invalid
from compozy.session.lifecycle.inbox import DISMISS
from compozy.session.records.live import read_secrets
from compozy.session.records.replay import assembled
from compozy.session.records.storage import budget_attention, measure
from compozy.states import SessionState
from compozy.store.compaction import compact, file_bytes, store_bytes

log = logging.getLogger("compozy.retention")

DAY = 86400
ROTATED_LOGS = 5  # compozy.log.1 .. .5
STORAGE_QUERY_LIMIT = 50
STORAGE_CAUSE = "storage:budget"  # the inbox item of the disk budget: one at a time, daemon-wide


def _age_days(stamp, now):
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return 0
    return (now - moment).total_seconds() / DAY


def plan(records, config, home, now):
    """What the policy would do now: {"compact", "delete", "logs", "crash_bundles"}."""
    compact_after, delete_after = (config["retention.compact_archived_after_days"],
                                   config["retention.delete_archived_after_days"])
    archived = [r for r in records if r.archived and r.state == SessionState.STOPPED]
    delete = [r for r in archived if delete_after and _age_days(r.archived_at, now) >= delete_after]
    doomed = {r.id for r in delete}
    compacting = [r for r in archived if compact_after and r.id not in doomed and "compacted_at" not in r.extra
                  and _age_days(r.archived_at, now) >= compact_after]
    return {"compact": [_planned(home, r) for r in compacting], "delete": [_planned(home, r) for r in delete],
            "logs": _log_plan(home, config, now), "crash_bundles": _bundle_plan(home, config, now)}


def _planned(home, record):
    return {"session_id": record.id, "workspace_id": record.workspace_id, "archived_at": record.archived_at,
            "bytes": sum(store_bytes(str(home.events_file(record.id))))}


def _aged_files(folder, prefix, max_age_days, max_bytes, now):
    """Files to remove: older than max_age_days, then the oldest while the rest exceed max_bytes."""
    try:
        entries = sorted((e for e in os.scandir(folder) if e.is_file(follow_symlinks=False)
                          and e.name.startswith(prefix)), key=lambda e: e.stat().st_mtime)
    except OSError:
        return []
    doomed = [e for e in entries if max_age_days and (now.timestamp() - e.stat().st_mtime) / DAY >= max_age_days]
    kept = [e for e in entries if e not in doomed]
    total = sum(e.stat().st_size for e in kept)
    while kept and max_bytes and total > max_bytes:
        oldest = kept.pop(0)
        total -= oldest.stat().st_size
        doomed.append(oldest)
    return [{"path": e.path, "bytes": e.stat().st_size} for e in doomed]


def _log_plan(home, config, now):
    current = str(home.log_file)
    rotated = _aged_files(home.logs_dir, os.path.basename(current) + ".", config["retention.logs_max_age_days"],
                          config["retention.logs_max_bytes"], now)
    rotate = file_bytes(current) > config["retention.logs_max_bytes"]
    return {"rotate": rotate, "remove": rotated}


def _bundle_plan(home, config, now):
    return _aged_files(home.crash_bundles_dir, "sess_", config["retention.crash_bundles_max_age_days"],
                       config["retention.crash_bundles_max_bytes"], now)


class Keeper:
    """Runs the retention policy and checks the disk budget: every retention.interval, and when asked."""

    def __init__(self, services, sessions, remove):
        """sessions(id) -> the LiveSession; remove(record) deletes a session as `session remove` does."""
        self.services, self.sessions, self.remove = services, sessions, remove
        self.attention = None
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = None

    def started(self):
        self._thread = self.services.threads.start("retention", self._run)

    def closing(self):
        self._stop.set()

    def _run(self):
        """The budget at boot; the policy first after one interval (never in the middle of a boot's work)."""
        try:
            self.check_budget(measure(self.services.home, self.records())["total_bytes"])
        except Exception:  # noqa: BLE001 (the next interval tries again)
            log.exception("retention: measuring the home failed")
        while not self._stop.wait(max(1.0, self.services.config["retention.interval"])):
            try:
                self.run(dry_run=False, scheduled=True)
            except Exception:  # noqa: BLE001 (the next interval tries again)
                log.exception("retention: the policy failed")

    def records(self):
        return self.services.store.in_states(list(SessionState))

    def report(self, limit=STORAGE_QUERY_LIMIT):
        """The storage report (measure()) with the budget and its attention item, checked now."""
        document = measure(self.services.home, self.records())
        self.check_budget(document["total_bytes"])
        sessions = document["sessions"]
        return {**document, "sessions": sessions[:limit], "session_count": len(sessions),
                "max_bytes": self.services.config["storage.max_bytes"], "attention": self.attention}

    def attention_items(self):
        """The daemon's own attention items (not a session's): the disk budget's, when raised."""
        return [self.attention] if self.attention else []

    def check_budget(self, total):
        attention = budget_attention(total, self.services.config["storage.max_bytes"])
        previous, self.attention = self.attention, attention
        if (previous is None) != (attention is None):
            if attention:
                log.warning("storage.budget %s", attention["summary"])
            self.services.catalog_feed.publish_counted({"type": "daemon_attention_changed", "kind": "storage_budget",
                                                        "attention": attention, "previous": previous})
            if attention:
                self.services.inbox.open(STORAGE_CAUSE, "storage_budget", None, attention["summary"], [DISMISS],
                                         attention)
        if attention is None:  # also at boot: the home may have shrunk while the daemon was down
            self.services.inbox.resolve_cause(STORAGE_CAUSE, "the home is back under storage.max_bytes")

    def run(self, dry_run, scheduled=False):
        """The policy's plan, carried out unless dry_run; answers what it did (or would do)."""
        with self._lock:
            now = datetime.fromtimestamp(self.services.clock.wall(), timezone.utc)
            chosen = plan(self.records(), self.services.config, self.services.home, now)
            if not dry_run:
                chosen["compacted"] = [self._compact(item) for item in chosen["compact"]]
                self._delete(chosen["delete"])
                self._rotate(chosen["logs"])
                for item in chosen["crash_bundles"]:
                    _unlink(item["path"])
            if scheduled:
                self.check_budget(measure(self.services.home, self.records())["total_bytes"])
            return {"dry_run": dry_run, **chosen}

    def _compact(self, item):
        session = self.sessions(item["session_id"])
        secrets = read_secrets(self.services, session)
        with session.lock:
            self.services.store.logs.forget(session.id)
            result = compact(str(self.services.home.events_file(session.id)),
                             lambda texts: assembled("".join(texts), secrets))
            session.record.extra["compacted_at"] = now_iso()
            session.save()
        log.info("retention.compacted session_id=%s folded_runs=%d deleted_events=%d bytes_before=%d bytes_after=%d",
                 session.id, result["folded_runs"], result["deleted_events"], result["bytes_before"],
                 result["bytes_after"])
        return {"session_id": session.id, **result}

    def _delete(self, items):
        deleted = []
        for item in items:
            try:
                self.remove(self.services.store.require(item["session_id"]))
                deleted.append(item["session_id"])
            except Exception:  # noqa: BLE001 (one session kept is logged; the rest go on)
                log.exception("retention: could not delete session %s", item["session_id"])
        if deleted:
            log.warning("retention.deleted session_ids=%s (archived longer than retention.delete_archived_after_days)",
                        ",".join(deleted))

    def _rotate(self, logs):
        for item in logs["remove"]:
            _unlink(item["path"])
        if not logs["rotate"]:
            return
        current = str(self.services.home.log_file)
        for number in range(ROTATED_LOGS - 1, 0, -1):
            if os.path.exists(f"{current}.{number}"):
                os.replace(f"{current}.{number}", f"{current}.{number + 1}")
        os.replace(current, f"{current}.1")  # the daemon's handler reopens compozy.log at its next line
        log.info("retention.rotated log %s", current)


def _unlink(path):
    try:
        os.unlink(path)
        log.info("retention.removed %s", path)
    except FileNotFoundError:
        pass


class Storage:
    """The façade's storage report and retention runs (mixed into SessionManager, which supplies keeper)."""

    def storage(self, query=None):
        """Bytes by kind, workspace and session (largest first), the 7-day growth and the disk budget."""
        query = dict(query or {})
        unknown = sorted(set(query) - {"limit"})
        if unknown:
            raise invalid(f"unknown parameter(s): {', '.join(unknown)}", filters=unknown)
        limit = v.query_int(query.get("limit"), "limit", 1, 10000) or STORAGE_QUERY_LIMIT
        return {"storage": self.keeper.report(limit)}

    def run_retention(self, body=None):
        """Carry out the retention policy now (dry_run: only say what it would do)."""
        body = v.check_body(body or {}, v.RETENTION_FIELDS)
        return {"retention": self.keeper.run(dry_run=bool(body.get("dry_run")))}
