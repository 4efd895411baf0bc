"""After an unclean exit: stale states are classified truthfully, orphaned agents are stopped,
in-flight control rows are settled, and interrupted transcripts are repaired by appending.

Layer 4. Repair never truncates, deletes or resequences events.
"""

from __future__ import annotations

import logging

from compozy import proc
from compozy.errors import CompozyError
from compozy.session.lifecycle.recorded import prove_exit
from compozy.session.records.control import move_admission, move_entry, orphan_interactions
from compozy.session.records.store import SessionStore
from compozy.states import (RUNTIME, SESSION, AdmissionState, Attention, Disposition, FailureKind, QueueStatus, RuntimeStatus,
                            SessionState, StopReason)
from compozy.store.records import Admission

log = logging.getLogger("compozy.repair")

REPAIRABLE_REASONS = (StopReason.AGENT_CRASHED.value, StopReason.ERROR.value)
# What stale_classification may change, as SQL over the catalog row: a superset, decided in Python.
MAYBE_STALE = ("state != 'active' OR json_extract(doc, '$.runtime.process') IS NOT NULL OR "
               "COALESCE(json_extract(doc, '$.runtime.status'), 'unbound') != 'unbound' OR "
               "COALESCE(json_extract(doc, '$.runtime.acp_session_id'), '') != ''")
MAYBE_REPAIRABLE = "json_extract(doc, '$.stop_reason') IN ({})".format(", ".join(f"'{r}'" for r in REPAIRABLE_REASONS))
TOOL_INTERRUPTED = "Tool call interrupted before a result was persisted."
TURN_INTERRUPTED = "Session interrupted before a terminal prompt event was persisted."
AGENT_HOME_MARK = "COMPOZY_AGENT_HOME"
ORPHAN_TERM_GRACE, ORPHAN_KILL_GRACE = 2.0, 5.0


def stale_classification(record):
    """(stop_reason, failure_kind, detail) for a live state found at boot, or None to keep it."""
    state, runtime = record.state, record.runtime
    if state == SessionState.STOPPING:
        return StopReason.AGENT_CRASHED, FailureKind.PROCESS_EXIT, "stop did not complete"
    if state == SessionState.STARTING:
        return StopReason.ERROR, FailureKind.STARTUP_FAILURE, "start did not complete"
    if state != SessionState.ACTIVE:
        return None
    if runtime.process or runtime.status != RuntimeStatus.UNBOUND:
        return StopReason.AGENT_CRASHED, FailureKind.PROCESS_EXIT, "daemon crashed while session active"
    if runtime.acp_session_id:
        return StopReason.SHUTDOWN, None, "daemon exited while the idle session runtime was released"
    return None  # never bound: nothing ran, nothing was lost; it stays active and unbound


def kill_orphans(home, processes):
    """Agents a previous daemon on this home left behind (the home lock proves it is gone)."""
    found = processes.marked(f"{AGENT_HOME_MARK}={home.root}")
    for identity in found:
        report = proc.kill_tree(identity, None, ORPHAN_TERM_GRACE, ORPHAN_KILL_GRACE, processes=processes)
        log.warning("stopped orphaned agent pid %s from a previous daemon (verified=%s)", identity.pid,
                    report.verified)
    return len(found)


def classify_stale(store, processes=proc.LINUX):
    """Boot rules for sessions left starting, active or stopping; returns the repaired IDs."""
    return [record.id for record in store.in_states((SessionState.STARTING, SessionState.ACTIVE,
                                                     SessionState.STOPPING), MAYBE_STALE)
            if settle_stale(store, record, processes)]


def settle_stale(store, record, processes):
    """One session found live by a boot (or an adoption): stopped, or left stopping when its agent's exit
    cannot be proven; False when it is kept as it is."""
    verdict = stale_classification(record)
    if verdict is None:
        return False
    _, unproven = prove_exit(record.runtime.process, processes, ORPHAN_TERM_GRACE, ORPHAN_KILL_GRACE)
    if unproven is not None:
        leave_stopping(store, record, unproven)
        return True
    reason, kind, detail = verdict
    stale = record.state
    status = RUNTIME.check(record.runtime.status, RuntimeStatus.UNBOUND, repair=True)
    record.change(state=SESSION.check(stale, SessionState.STOPPED, repair=True).value, stop_reason=reason.value,
                  stop_detail=detail, verified=True, runtime=record.runtime.replace(
                      status=status.value, transition="", process=None, recovery=None, effective=None))
    if kind is not None:
        record.failure = {"kind": kind.value, "summary": detail}
    store.save(record)
    log.warning("session %s was %s at an unclean exit: stopped (%s, %s)", record.id, stale, reason.value, detail)
    return True


def repair_adopted(store, record, processes=proc.LINUX, checkpoints=None):
    """The boot repair of one session whose node went away, for the node that adopted it (docs/fleet.md): its
    stale live state settled as a boot settles it, its carried control rows settled as a boot settles its own
    (queued inputs stay queued, pending permission requests are orphaned), then its interrupted transcript
    repaired (with the cut turn's end checkpoint, as at a boot: checkpoints, the Checkpointer)."""
    settle_stale(store, record, processes)
    settle_control_rows(store, record.id)
    if record.state == SessionState.STOPPED and record.stop_reason in REPAIRABLE_REASONS:
        if repair(store, record, checkpoints=checkpoints)["applied"]:
            log.warning("repaired the interrupted transcript of adopted session %s by appending", record.id)


def leave_stopping(store, record, unproven):
    """A recorded process whose exit cannot be proven: the session is left stopping, unverified and
    needing attention (a stop retried later proves it gone or says again why it cannot)."""
    stale, status = record.state, RUNTIME.check(record.runtime.status, RuntimeStatus.UNBOUND, repair=True)
    record.change(state=SESSION.check(stale, SessionState.STOPPING, repair=True).value, verified=False,
                  attention=Attention.STOP_VERIFICATION_FAILED.value, stop_detail=f"stop not verified: {unproven}",
                  runtime=record.runtime.replace(status=status.value, transition="", recovery=None, effective=None))
    store.save(record)
    log.error("session %s was %s at an unclean exit: left stopping (%s)", record.id, stale, unproven)


def settle_control_rows(store: SessionStore, only: str | None = None) -> None:
    """Admissions mid-bind started when their user_message is in the log, else never did; entries
    mid-dispatch are sent or queued again; pending permission requests orphaned. only: one session's rows
    (an adopted session's), else every session's (a boot)."""
    catalog = store.catalog
    for admission in catalog.admissions_in_state(AdmissionState.BINDING):
        if only is None or admission.session_id == only:
            settle_binding_admission(store, admission)
    for session_id in catalog.sessions_with_entries((QueueStatus.DISPATCHING,)):
        if only is not None and session_id != only:
            continue
        record = store.get(session_id)
        for entry in catalog.entries(session_id, (QueueStatus.DISPATCHING,)):
            sent = record and any(e["type"] == "user_message" for e in
                                  store.events(record).read(turn_id=entry.turn_id, limit=1))
            move_entry(catalog, entry.id, QueueStatus.DISPATCHING, QueueStatus.SENT if sent else QueueStatus.QUEUED,
                       repair=True)
    orphan_interactions(catalog, only)


def settle_binding_admission(store: SessionStore, admission: Admission) -> None:
    """A prompt caught between its user_message and its admission's `started`: the log says it ran,
    so a retry must answer that turn, never run the prompt again."""
    record = store.get(admission.session_id)
    message_id = admission.message_id
    ran = record is not None and message_id and store.events(record).user_message(message_id)
    if not ran:
        move_admission(store.catalog, admission.id, AdmissionState.BINDING, AdmissionState.WITHDRAWN, repair=True)
        return
    result = {"disposition": Disposition.STARTED.value, "turn_id": ran["turn_id"], "message_id": message_id,
              "idempotency_key": admission.idempotency_key, "replayed": False}
    move_admission(store.catalog, admission.id, AdmissionState.BINDING, AdmissionState.STARTED, repair=True,
                   result=result)


def last_turn_events(log_):
    """(turn_id, its events): the last turn is the one of the newest user_message."""
    newest = log_.read(types=["user_message"], limit=1)
    if not newest:
        return None, []
    turn_id = newest[0]["turn_id"]
    return turn_id, log_.read_all(turn_id=turn_id)


def plan_repair(turn_id, turn_events, checkpoints=False):
    """The appends that terminalize turn_id, or [] when it already ended. checkpoints: file checkpoints are on,
    so a turn with a start checkpoint and no end one gets its end checkpoint before its terminal error."""
    if turn_id is None or any(e["type"] in ("done", "error") for e in turn_events):
        return []
    finished = {e["content"].get("tool_call_id") for e in turn_events if e["type"] == "tool_result"}
    actions = []
    for event in turn_events:
        tool_id = event["content"].get("tool_call_id")
        if event["type"] == "tool_call" and not event["content"].get("update") and tool_id not in finished:
            finished.add(tool_id)
            actions.append({"action": "append_interrupted_tool_result", "tool_call_id": tool_id})
    kinds = {e["content"].get("kind") for e in turn_events if e["type"] == "checkpoint"}
    if checkpoints and "start" in kinds and "end" not in kinds:
        actions.append({"action": "append_end_checkpoint"})
    actions.append({"action": "append_terminal_error"})
    return actions


def apply_repair(log_, agent_name, turn_id, actions, end_checkpoint=None):
    """end_checkpoint(): the content of the end checkpoint taken now (None: none taken)."""
    items = []
    for action in actions:
        if action["action"] == "append_end_checkpoint":
            content = end_checkpoint() if end_checkpoint is not None else None
            items += [("checkpoint", turn_id, content, agent_name)] if content is not None else []
        elif action["action"] == "append_interrupted_tool_result":
            items.append(("tool_result", turn_id, {"tool_call_id": action["tool_call_id"], "status": "failed",
                                                   "error": True, "interrupted": True,
                                                   "output": TOOL_INTERRUPTED}, agent_name))
        else:
            items.append(("error", turn_id, {"error": TURN_INTERRUPTED, "repaired": True}, agent_name))
    return log_.append(items)


def repair(store, record, dry_run=False, force=False, publish=None, checkpoints=None):
    """The append-only transcript repair, as POST .../repair and boot run it. checkpoints: the Checkpointer
    (session.turns.checkpoints), which takes the end checkpoint of the interrupted turn; None: none."""
    if record.state != SessionState.STOPPED:
        raise CompozyError("session_not_stopped", "repair runs on stopped sessions; stop it first")
    if record.stop_reason not in REPAIRABLE_REASONS and not force:
        raise CompozyError("repair_requires_force", f"stop_reason {record.stop_reason!r} is not "
                           "agent_crashed or error; pass force to repair anyway")
    log_ = store.events(record)
    turn_id, turn_events = last_turn_events(log_)
    actions = plan_repair(turn_id, turn_events, checkpoints is not None and checkpoints.enabled)
    result = {"session_id": record.id, "dry_run": dry_run, "turn_id": turn_id, "actions": actions,
              "issues": [] if actions else ["no_repairable_turn"], "applied": False}
    if actions and not dry_run:
        records = apply_repair(log_, record.agent_name, turn_id, actions,
                               lambda: checkpoints.after_crash(record, log_, turn_id))
        result["applied"] = True
        result["appended_sequences"] = [r["sequence"] for r in records]
        if publish:
            publish(records)
    return result


def repair_at_boot(store, checkpoints=None):
    repaired = []
    for record in store.in_states((SessionState.STOPPED,), MAYBE_REPAIRABLE):
        if record.stop_reason not in REPAIRABLE_REASONS:
            continue
        try:
            if repair(store, record, checkpoints=checkpoints)["applied"]:
                repaired.append(record.id)
        except Exception:  # noqa: BLE001 (one unreadable store must not stop the boot)
            log.exception("transcript repair of %s failed", record.id)
    for session_id in repaired:
        log.warning("repaired the interrupted transcript of %s by appending", session_id)
    return repaired
