"""Session creation: resolve workspace and agent, derive lineage, persist, activate unbound.

Layer 4. Creation never accepts a prompt or runtime selector.
"""

from compozy.errors import CompozyError, invalid
from compozy.ids import new_id, validate_id
from compozy.session.records.governed import check_agent_creation
from compozy.session.records.store import new_record
from compozy.states import CREATE_LINEAGE_KINDS, LineageKind, SessionType


def create_session(body, *, config, workspaces, store, caller=None, spawn=None, session_type=SessionType.USER,
                   creator=None):
    """caller: the bound agent creating it (compozy.session.turns.identity.Caller), its parent by default
    when the new session lands in the caller's workspace (creation provenance). spawn: the metadata of a
    governed child (compozy.session.lifecycle.children), which makes it a `spawned` session. session_type:
    the daemon's other own creations pass theirs; a body may only ask for a user session. creator: the
    record of the agent's session that asks (the caller's, or a spawn's parent), held to the limits on
    what agents create (records/governed.py)."""
    body = dict(body)  # the parsed request's fields; the caller's parent is added below
    if ("workspace" in body) == ("workspace_path" in body):
        raise invalid("give exactly one of workspace or workspace_path")
    if "name" in body and not body["name"].strip():
        raise invalid("name must not be blank", field="name")
    agent = config.agent(body.get("agent_name", config["default_agent"]))  # step 1: resolve the agent definition
    workspace = workspaces.check_usable(workspaces.resolve(body["workspace"]) if "workspace" in body
                                        else workspaces.for_path(body["workspace_path"]))  # step 1: and the workspace
    session_id = new_id("sess")
    if caller is not None and "parent_session_id" not in body and caller.workspace_id == workspace["id"]:
        body["parent_session_id"] = caller.id
    lineage = _lineage(body, workspace, store, session_id)
    session_type = str(session_type)
    if spawn is not None:
        lineage, session_type = {**lineage, "kind": LineageKind.SPAWN.value, "spawn_role": spawn["role"]}, "spawned"
    creator = creator or (caller.session.record if caller is not None else None)
    if creator is not None:
        check_agent_creation(store.catalog, creator, lineage)
    record = new_record(session_id, name=body.get("name"), session_type=session_type,
                        agent_name=agent.name, workspace_id=workspace["id"], cwd=workspace["path"],
                        lineage=lineage)
    if spawn is not None:
        record.extra["spawn"] = spawn
    return store.create(record)  # steps 2-5: directory, events.db, meta.json + catalog, active/unbound


def _lineage(body, workspace, store, session_id):
    kind = body.get("lineage_kind")
    parent_id = body.get("parent_session_id")
    if kind is not None and kind not in CREATE_LINEAGE_KINDS:
        raise invalid("lineage_kind must be provenance or recovery", field="lineage_kind")
    if parent_id is None:
        if kind is not None:
            raise invalid("lineage_kind needs parent_session_id", field="lineage_kind")
        return {"kind": LineageKind.ROOT.value, "parent_session_id": None,
                "root_session_id": session_id, "spawn_depth": 0}
    validate_id(parent_id, "sess", field="parent_session_id", not_found="parent_session_not_found")
    parent = store.get(parent_id)
    if parent is None or parent.workspace_id != workspace["id"]:
        raise CompozyError("parent_session_not_found",
                           f"parent session {parent_id} does not exist in workspace {workspace['name']}",
                           parent_session_id=parent_id)
    parent_lineage = parent.lineage or {}
    return {"kind": kind or LineageKind.PROVENANCE.value, "parent_session_id": parent_id,
            "root_session_id": parent_lineage.get("root_session_id") or parent_id,
            "spawn_depth": int(parent_lineage.get("spawn_depth") or 0) + 1}
