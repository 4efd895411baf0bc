"""What the home's files take on disk: by session, workspace and kind, the growth of the last 7 days, and
the disk budget's attention item.

Layer 4. Kinds: events (events.db), wal (its WAL and shared memory), checkpoints (the shadow repositories
under <home>/checkpoints, one per workspace, and a session's own checkpoints folder), crash_bundles, logs,
search_index (search.db), catalog (compozy.db) and other (meta.json and the rest). A workspace's bytes are
its sessions' and its shadow repository's (`checkpoints`). The growth is the total against the daily sample
of 7 days ago (or the oldest kept), from storage-history.json, which each measurement updates.
"""

import json
import os
from datetime import date, timedelta

from compozy.paths import write_private_json
from compozy.store.compaction import file_bytes, store_bytes, tree_bytes

KINDS = ("events", "wal", "checkpoints", "crash_bundles", "logs", "search_index", "catalog", "other")
GROWTH_DAYS = 7
KEPT_SAMPLES = 31
BUDGET_FRACTION = 0.9


def session_bytes(directory):
    """{kind: bytes} of one session's folder."""
    events, wal = store_bytes(os.path.join(directory, "events.db"))
    checkpoints = tree_bytes(os.path.join(directory, "checkpoints"))
    return {"events": events, "wal": wal, "checkpoints": checkpoints,
            "other": tree_bytes(directory) - events - wal - checkpoints}


def checkpoint_repositories(home):
    """{workspace ID: bytes} of the shadow repositories under <home>/checkpoints (a folder per workspace,
    named by its ID; its sessions may all be gone)."""
    try:
        entries = list(os.scandir(home.checkpoints_dir))
    except OSError:
        return {}
    return {entry.name: tree_bytes(entry.path) for entry in entries if entry.is_dir(follow_symlinks=False)}


def crash_bundles(home):
    """{session ID: bytes} of the crash bundles (named <session ID>-<time>.json)."""
    found = {}
    for entry in _files(home.crash_bundles_dir):
        session_id = entry.name.rsplit("-", 1)[0]
        found[session_id] = found.get(session_id, 0) + entry.stat().st_size
    return found


def _files(folder):
    try:
        return [entry for entry in os.scandir(folder) if entry.is_file(follow_symlinks=False)]
    except OSError:
        return []


def measure(home, records, today=None):
    """The storage report: totals by kind, workspaces, every session (largest first) and the growth."""
    workspace_of = {record.id: record.workspace_id for record in records}
    archived = {record.id for record in records if record.archived}
    bundles = crash_bundles(home)
    kinds = dict.fromkeys(KINDS, 0)
    sessions, workspaces = [], {}
    for entry in os.scandir(home.sessions_dir):
        if not entry.is_dir(follow_symlinks=False) or not entry.name.startswith("sess_"):
            continue
        parts = {**session_bytes(entry.path), "crash_bundles": bundles.get(entry.name, 0)}
        total = sum(parts.values())
        for kind, size in parts.items():
            kinds[kind] += size
        workspace_id = workspace_of.get(entry.name)
        workspaces[workspace_id] = workspaces.get(workspace_id, 0) + total
        sessions.append({"session_id": entry.name, "workspace_id": workspace_id, "archived": entry.name in archived,
                         "bytes": total, "kinds": parts})
    repositories = checkpoint_repositories(home)
    kinds["checkpoints"] += tree_bytes(home.checkpoints_dir)
    for workspace_id, size in repositories.items():
        workspaces[workspace_id] = workspaces.get(workspace_id, 0) + size
    kinds["crash_bundles"] = sum(bundles.values())
    kinds["logs"] = tree_bytes(home.logs_dir) - kinds["crash_bundles"]
    kinds["search_index"] = sum(file_bytes(f"{home.search_file}{suffix}") for suffix in ("", "-wal", "-shm"))
    kinds["catalog"] = sum(file_bytes(f"{home.catalog_file}{suffix}") for suffix in ("", "-wal", "-shm"))
    kinds["other"] += file_bytes(home.storage_history_file)
    total = sum(kinds.values())
    sessions.sort(key=lambda s: s["bytes"], reverse=True)
    return {"total_bytes": total, "kinds": kinds,
            "workspaces": sorted(({"workspace_id": k, "bytes": v, "checkpoints": repositories.get(k, 0)}
                                  for k, v in workspaces.items() if k),
                                 key=lambda w: w["bytes"], reverse=True),
            "sessions": sessions, "growth": growth(home, total, today or date.today())}


def growth(home, total, today):
    """{days, bytes, since}: the total's change since the sample GROWTH_DAYS ago (or the oldest kept); today's
    sample is recorded."""
    try:
        with open(home.storage_history_file, encoding="utf-8") as handle:
            samples = json.load(handle).get("samples", {})
    except (OSError, ValueError):
        samples = {}
    samples[today.isoformat()] = total
    kept = dict(sorted(samples.items())[-KEPT_SAMPLES:])
    try:
        write_private_json(home.storage_history_file, {"samples": kept}, sync=False)
    except OSError:
        pass
    start = (today - timedelta(days=GROWTH_DAYS)).isoformat()
    since = next((day for day in sorted(kept) if day >= start), today.isoformat())
    return {"days": GROWTH_DAYS, "bytes": total - kept[since], "since": since}


def budget_attention(total, max_bytes):
    """The storage_budget attention item when the home uses 90% of its budget or more, else None."""
    if not max_bytes or total < BUDGET_FRACTION * max_bytes:
        return None
    return {"kind": "storage_budget", "used_bytes": total, "max_bytes": max_bytes,
            "percent": round(100 * total / max_bytes, 1),
            "summary": f"the home uses {round(100 * total / max_bytes)}% of storage.max_bytes; compozy deletes "
                       "nothing for it: archive and compact, or set a retention policy"}
