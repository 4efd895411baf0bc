"""Resource documents: what HTTP answers and `-o json` prints, built once from stored records.

Layer 2: pure functions over dicts.
"""

import copy
import json

OPTIONAL_FIELDS = ("stop_reason", "stop_detail", "failure", "attention", "derivation")
IDLE_SUPERVISION = {"work_signals": [], "sources": {}, "quiet_warning": None}


def session_resource(document, overlay=None, max_sequence=0):
    """The session read: every field interface.md fixes, plus the live overlay when bound."""
    overlay = overlay or {}
    runtime = _runtime(document.get("runtime") or {}, overlay.get("runtime"))
    resource = {
        "id": document["id"], "name": document.get("name"), "type": document["type"],
        "state": document["state"], "agent_name": document["agent_name"],
        "workspace_id": document["workspace_id"], "cwd": document.get("cwd"),
        "created_at": document["created_at"], "updated_at": document["updated_at"],
        "archived": bool(document.get("archived")),
        "fences": {**(document.get("fences") or {"epoch": 0, "generation": 0}), "max_sequence": max_sequence},
        "runtime": runtime,
        "lineage": _lineage(document.get("lineage") or {}),
        "activity": overlay.get("activity") or document.get("activity") or {"last_activity_at": None},
        "health": overlay.get("health") or stored_health(document),
        "supervision": overlay.get("supervision") or copy.deepcopy(IDLE_SUPERVISION),
        "escalated": bool(document.get("escalated")),
    }
    if document.get("archived_at"):
        resource["archived_at"] = document["archived_at"]
    if document.get("verified") is not None:
        resource["verified"] = document["verified"]
    for name in OPTIONAL_FIELDS:
        if document.get(name) not in (None, ""):
            resource[name] = document[name]
    return resource


def _runtime(stored, live):
    runtime = {
        "status": stored.get("status", "unbound"), "transition": stored.get("transition", ""),
        "generation": stored.get("generation", 0), "selected": stored.get("selected"),
        "selection_revision": stored.get("selection_revision", 0),
    }
    for name in ("effective", "last_known", "acp_session_id", "recovery"):
        if stored.get(name):
            runtime[name] = stored[name]
    if stored.get("process"):
        runtime["process"] = {k: stored["process"].get(k) for k in ("pid", "start_time")}
    if live:
        runtime.update(live)
    return runtime


def _lineage(stored):
    lineage = {"kind": stored.get("kind", ""), "parent_session_id": stored.get("parent_session_id"),
               "root_session_id": stored.get("root_session_id"), "spawn_depth": stored.get("spawn_depth", 0)}
    for name in ("spawn_role", "origin_agent_name", "origin_message_id"):
        if stored.get(name):
            lineage[name] = stored[name]
    return lineage


def stored_health(document):
    """Health of a session with no live runtime in this daemon."""
    stopped = document["state"] == "stopped"
    return {"state": "stopped" if stopped else "idle", "health": "unknown" if stopped else "healthy",
            "active_prompt": False, "attachable": False,
            "eligible_for_wake": not stopped and not document.get("archived"),
            **({"ineligibility_reason": "session_not_attachable"} if stopped else {})}


def compact_status(resource):
    """`session status`: state speaks the health vocabulary; lifecycle_state carries the lifecycle."""
    status = dict(resource)
    status["lifecycle_state"] = resource["state"]
    status["state"] = resource["health"]["state"]
    status.setdefault("verified", None)
    status.setdefault("attention", None)
    return status


def workspace_resource(row):
    return {"id": row["id"], "name": row["name"], "path": row["path"], "created_at": row["created_at"]}


def entry_resource(entry):
    return {"id": entry["id"], "session_id": entry["session_id"], "status": entry["status"],
            "mode": entry["mode"], "message": entry["message"], "message_id": entry["message_id"],
            "idempotency_key": entry["idempotency_key"], "turn_id": entry["turn_id"],
            "runtime": entry.get("runtime") or {}, "position": entry["position"],
            "created_at": entry["created_at"], "updated_at": entry["updated_at"]}


def interaction_resource(row):
    resource = {"request_id": row["id"], "session_id": row["session_id"], "turn_id": row.get("turn_id"),
                "kind": row["kind"], "status": row["status"], "created_at": row["created_at"],
                **(row.get("payload") or {})}
    if row.get("decision"):
        resource["decision"] = row["decision"]
    return resource


class JSONText(str):
    """A document already encoded as JSON (surfaces send it as is)."""


def encode(document):
    return json.dumps(document, separators=(",", ":"))


class Answer(dict):
    """A document that says which kind of answer it is (a prompt's disposition, a stop's StopAnswer);
    the operation table maps each kind to its HTTP status."""

    def __init__(self, kind, document):
        super().__init__(document)
        self.kind = str(kind)
