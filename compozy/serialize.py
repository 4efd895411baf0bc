"""Resource documents: what HTTP answers and `-o json` prints, built once from stored records.

Layer 2: pure functions over session records (their attributes) and catalog rows (dicts).
"""

from dataclasses import dataclass
from datetime import datetime, timezone

from compozy.states import HealthState, RuntimeStatus, SessionState
from compozy.text import compact_json

OPTIONAL_FIELDS = ("stop_reason", "stop_detail", "failure", "attention", "derivation", "spawn", "auto_title")


def session_resource(record, overlay=None, max_sequence=0, agent_defaults=None):
    """The session read of a SessionRecord: every field interface.md fixes, plus the live overlay when bound.
    agent_defaults: the owning agent's configured runtime, for runtime.display when nothing else is known."""
    overlay = overlay or {}
    resource = {
        "id": record.id, "name": record.name, "type": record.type,
        "state": record.state, "agent_name": record.agent_name,
        "workspace_id": record.workspace_id, "cwd": record.cwd,
        "created_at": record.created_at, "updated_at": record.updated_at,
        "archived": bool(record.archived),
        "fences": {**(record.fences or {"epoch": 0, "generation": 0}), "max_sequence": max_sequence},
        "runtime": _runtime(record.runtime, overlay.get("runtime"), agent_defaults),
        "lineage": _lineage(record.lineage or {}),
        "activity": overlay.get("activity") or record.activity or {"last_activity_at": None},
        "health": overlay.get("health") or health(record),
        "supervision": overlay.get("supervision") or idle_supervision(),
        "escalated": bool(record.escalated),
    }
    if record.archived_at:
        resource["archived_at"] = record.archived_at
    if record.verified is not None:
        resource["verified"] = record.verified
    for name in OPTIONAL_FIELDS:
        value = getattr(record, name, None) or record.extra.get(name)
        if value not in (None, ""):
            resource[name] = value
    return resource


def idle_supervision():
    return {"work_signals": [], "sources": {}, "quiet_warning": None}


DISPLAY_FIELDS = ("provider", "model", "reasoning_effort", "speed")


def runtime_display(runtime, agent_defaults=None):
    """What a session-list row shows as the runtime (the seed): effective, else last_known, else the
    selection over the agent's configured defaults; `source` says which."""
    for source in ("effective", "last_known"):
        chosen = _named(runtime.get(source))
        if chosen.get("provider") or chosen.get("model"):
            return {**chosen, "source": source}
    selected = _named(runtime.get("selected"))
    shown = {**_named(agent_defaults), **selected}
    return {**shown, "source": "selected" if selected else "agent_defaults"}


def _named(snapshot):
    return {name: snapshot[name] for name in DISPLAY_FIELDS if (snapshot or {}).get(name)}


def _runtime(stored, live, agent_defaults=None):
    runtime = {
        "status": stored.status, "transition": stored.transition, "generation": stored.generation,
        "selected": stored.selected, "selection_revision": stored.selection_revision,
    }
    for name in ("effective", "last_known", "acp_session_id", "recovery"):
        if getattr(stored, name):
            runtime[name] = getattr(stored, name)
    if stored.process:
        runtime["process"] = {k: stored.process.get(k) for k in ("pid", "start_time")}
    if stored.commands:
        runtime["available_commands"] = stored.commands
    if live:
        runtime.update(live)
    runtime["display"] = runtime_display(runtime, agent_defaults)
    return runtime


def _lineage(stored):
    lineage = {"kind": stored.get("kind", ""), "parent_session_id": stored.get("parent_session_id"),
               "root_session_id": stored.get("root_session_id"), "spawn_depth": stored.get("spawn_depth", 0)}
    for name in ("spawn_role", "origin_agent_name", "origin_message_id"):
        if stored.get(name):
            lineage[name] = stored[name]
    return lineage


def health(record, bound=None, prompting=False):
    """The health record of a session: bound is None when no runtime of it lives in this daemon
    (the stored view), else whether its agent process is alive; prompting when a turn runs."""
    stopped = record.state == SessionState.STOPPED
    if stopped or bound is None:
        return {"state": HealthState.STOPPED if stopped else HealthState.IDLE,
                "health": "unknown" if stopped else "healthy",
                "active_prompt": False, "attachable": False,
                "eligible_for_wake": not stopped and not record.archived,
                **({"ineligibility_reason": "session_not_attachable"} if stopped else {})}
    status = record.runtime.status
    degraded = ((not bound and status != RuntimeStatus.UNBOUND) or record.attention
                or status == RuntimeStatus.RECOVERING)
    active = record.state == SessionState.ACTIVE
    return {"state": HealthState.PROMPTING if prompting else HealthState.IDLE,
            "health": "degraded" if degraded else "healthy",
            "active_prompt": prompting, "attachable": active and bound and not record.failure,
            "eligible_for_wake": active and not prompting and not record.archived,
            **({"ineligibility_reason": "session_prompt_active"} if prompting else {})}


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


def node_resource(node, this=False, workspaces=()):
    """A node of the fleet (compozy.fleet.catalog.FleetCatalog.nodes) as the API shows it; this: the node that
    answers; workspaces: the ones it serves. status: up, stopped (it said it left) or unreachable (no heartbeat
    for fleet.unreachable_after)."""
    status = "up" if node["up"] else "stopped" if node["stopped"] else "unreachable"
    return {"name": node["name"], "address": node["address"], "version": node["version"], "status": status,
            "this_node": this, "started_at": _epoch_iso(node["started_at"]),
            "last_heartbeat": _epoch_iso(node["last_heartbeat"]), "heartbeat_age": node["heartbeat_age"],
            "capacity": {"max_agents": node["max_agents"], "free_memory": node["free_memory"]},
            "load": {"live_agents": node["live_agents"], "sessions": node["sessions"]}, "workspaces": list(workspaces)}


def _epoch_iso(seconds):
    stamp = datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def entry_resource(entry):
    """A queue entry (compozy.store.records.QueueEntry) as the API shows it."""
    return {"id": entry.id, "session_id": entry.session_id, "status": entry.status, "mode": entry.mode,
            "message": entry.message, "message_id": entry.message_id, "idempotency_key": entry.idempotency_key,
            "turn_id": entry.turn_id, "runtime": entry.runtime or {}, "position": entry.position,
            "created_at": entry.created_at, "updated_at": entry.updated_at}


def interaction_resource(interaction):
    """A permission interaction (compozy.store.records.Interaction) as the API shows it."""
    resource = {"request_id": interaction.id, "session_id": interaction.session_id, "turn_id": interaction.turn_id,
                "kind": interaction.kind, "status": interaction.status, "created_at": interaction.created_at,
                **(interaction.payload or {})}
    if interaction.decision:
        resource["decision"] = interaction.decision
    return resource


@dataclass(frozen=True)
class Export:
    """A file an operation answers as itself (an export): its text, media type and download name."""

    session_id: str
    format: str
    media_type: str
    filename: str
    text: str


class JSONText(str):
    """A document already encoded as JSON (surfaces send it as is)."""


encode = compact_json  # a document as compact JSON


class Answer(dict):
    """A document that says which kind of answer it is (a prompt's disposition, a stop's StopAnswer);
    the operation table maps each kind to its HTTP status."""

    def __init__(self, kind, document):
        super().__init__(document)
        self.kind = str(kind)
