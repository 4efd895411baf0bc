"""The session a continue or fork creates: its lineage, its runtime, and its derivation object.

Layer 4 (session.derive). The new session lives in the source's workspace and working directory,
names the source as provenance (parent_session_id) and keeps its tree (root_session_id), yet is a
new top-level session: spawn depth 0, nobody's child. Its `derivation` is what reads show and what
a retry answers; the carried context itself is stored with its events (records/transcript.py).
"""

from compozy.clock import now_iso
from compozy.session.derive.native import seeded
from compozy.session.records.store import new_record
from compozy.states import FIRST_PROMPT, FirstPrompt, SessionType


def child_record(child_id, request, source, snapshot, agent_name, runtime=None, clone=None):
    """The new session's record (active, runtime unbound) for a request of kind continue or fork;
    clone is the agent's own clone of the source, when one was asked for (derive/native.py)."""
    lineage = {"kind": request.kind, "parent_session_id": source.id,
               "root_session_id": (source.lineage or {}).get("root_session_id") or source.id, "spawn_depth": 0,
               "origin_agent_name": source.agent_name}
    if request.message_id:
        lineage["origin_message_id"] = request.message_id
    record = new_record(child_id, name=request.name, session_type=SessionType.USER.value, agent_name=agent_name,
                        workspace_id=source.workspace_id, cwd=source.cwd, lineage=lineage)
    derivation = derivation_of(request, source, snapshot)
    if clone is not None:
        derivation, runtime = seeded(derivation, runtime, clone)
    if runtime is not None:
        record.runtime = record.runtime.replace(**runtime)
    record.derivation = derivation
    return record


def derivation_of(request, source, snapshot):
    carry = snapshot.carry
    derivation = {"kind": request.kind, "source_session_id": source.id, "source_agent_name": source.agent_name,
                  "seed": "replay", "first_prompt": FirstPrompt.STAGED.value, "idempotency_key": request.key,
                  "through_turn_id": carry.through_turn_id, "message_count": carry.bounded.message_count,
                  "replay_bytes": carry.bounded.size, "truncated": carry.bounded.truncated,
                  "omitted_count": carry.bounded.omitted_count,
                  "source_turn_in_progress": carry.source_turn_in_progress, "created_at": now_iso()}
    if request.message is not None:
        derivation["first_message_id"] = request.first_message_id
    if request.route is not None:
        derivation["route"] = request.route
    if request.message_id:
        derivation["origin_message_id"] = request.message_id
    return derivation


def admitted(derivation):
    """The derivation once its first prompt went through the ordinary admission."""
    state = FIRST_PROMPT.check(derivation["first_prompt"], FirstPrompt.ADMITTED)
    return {**derivation, "first_prompt": state.value}
