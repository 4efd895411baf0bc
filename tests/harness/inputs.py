"""The inputs of the cross product: what a user, a second client or another session's agent can send
into a session while a runtime transition window is open (tests/harness/windows.py).

Each input sends its requests through the case (timed, checked against its bound and the refusals it
may meet: named 4xx codes only) and registers what it admitted, for the check that every admitted
input ran or was visibly refused. `twin` sends the same input from a second client (the Unix socket)
at the same moment as the first (TCP).
"""

import json
import threading
from dataclasses import dataclass
from datetime import datetime

from compozy.ids import new_id
from tests.harness.crossing import Answer, Expected
from tests.harness.runner import agents_of
from tests.harness.windows import LADDER

STOPPING = ("session_stop_in_progress",)
PROMPT_REFUSALS = STOPPING + ("session_archived",)
BUSY_REFUSALS = PROMPT_REFUSALS + ("session_not_active", "queue_full")
LADDER_WITHIN = LADDER + 2.0  # a stop that waits is answered when its ladder ends
DERIVE_REFUSALS = ("session_turn_in_progress", "session_fence_conflict", "session_archived")


def _prompt(case, surface, label, mode=None, **extra):
    ids = case.ids(label)
    body = {"message": f"[chunks 1] {label} {ids['message_id']}", **ids, **({"mode": mode} if mode else {}), **extra}
    answer = case.call("session.prompt", surface, allowed=BUSY_REFUSALS if mode else PROMPT_REFUSALS, **body)
    if answer.admitted:
        case.expected.append(Expected(answer.result["message_id"], answer.result.get("entry_id"), label))
    return answer


def plain(case, surface):
    _prompt(case, surface, "plain")


def interrupt(case, surface):
    _prompt(case, surface, "interrupt", "interrupt")


def steer(case, surface):
    _prompt(case, surface, "steer", "steer")


def queue(case, surface):
    _prompt(case, surface, "queue", "queue")


def cancel(case, surface):
    case.call("session.cancel", surface, allowed=("prompt_not_in_progress",))


def stop_wait(case, surface):
    answer = case.call("session.stop", surface, bound=LADDER_WITHIN, wait=True)
    _verified_means_gone(case, answer.result if answer.admitted else None)


def _verified_means_gone(case, outcome):
    """A verified stop means no process of the session's agents is alive (a process still being bound too)."""
    if outcome and outcome.get("verified"):
        case.survivors.extend(agents_of(case.session["id"]))


def stop_nowait(case, surface):
    case.call("session.stop", surface, wait=False)


def approve(case, surface):
    """The latest permission request the session asked (pending or already answered), else an unknown one."""
    asked = [e for e in case.events(type="permission") if e["content"].get("request_id")]
    request_id = asked[-1]["content"]["request_id"] if asked else new_id("perm")
    case.call("session.approve", surface, allowed=("permission_request_not_found", "permission_option_unavailable",
                                                   "permission_option_not_offered"),
              request_id=request_id, decision="allow-once")


def runtime_set(case, surface):
    revision = case.read()["runtime"]["selection_revision"]
    case.call("session.runtime.set", surface, allowed=("revision_conflict",),
              runtime={"reasoning_effort": "high"}, expected_revision=revision)


def runtime_clear(case, surface):
    revision = case.read()["runtime"]["selection_revision"]
    case.call("session.runtime.clear", surface, allowed=("revision_conflict",), expected_revision=revision)


def _queued(case, surface, label):
    """A queued entry to act on; None when the prompt was refused or ran at once (an idle session)."""
    answer = _prompt(case, surface, label, "queue")
    return answer.result if answer.admitted and answer.result.get("entry_id") else None


def queue_edit(case, surface):
    entry = _queued(case, surface, "queue-edit")
    if entry:
        ids = case.ids("edited")
        answer = case.call("session.input.edit", surface, allowed=("queue_entry_not_queued",), entry=entry["entry_id"],
                           message=f"[chunks 1] edited {ids['message_id']}", **ids)
        if answer.admitted:
            _replace(case, entry, Expected(ids["message_id"], entry["entry_id"], "edited"))


def queue_steer(case, surface):
    entry = _queued(case, surface, "queue-steer")
    if entry:
        current = case.read()["activity"]["current_turn_id"] or entry["turn_id"]
        ids = case.ids("promoted")
        answer = case.call("session.input.steer", surface, entry=entry["entry_id"], expected_turn_id=current,
                           allowed=("queue_entry_not_queued", "prompt_not_in_progress", "active_turn_mismatch"), **ids)
        if answer.admitted:
            _replace(case, entry, Expected(ids["message_id"], answer.result.get("entry_id"), "promoted"))


def queue_cancel(case, surface):
    entry = _queued(case, surface, "queue-cancel")
    if entry:
        case.call("session.input.cancel", surface, allowed=("queue_entry_not_queued",), entry=entry["entry_id"])


def _replace(case, entry, expected):
    case.expected[:] = [x for x in case.expected if x.entry_id != entry["entry_id"]] + [expected]


def _fences(case):
    fences = case.read()["fences"]
    return {"expected_epoch": fences["epoch"], "expected_generation": fences["generation"],
            "expected_max_sequence": fences["max_sequence"]}


def rewind(case, surface):
    messages = [e for e in case.events(type="user_message", archive="active") if not e["content"].get("steer")]
    if messages:
        case.call("session.rewind", surface, allowed=DERIVE_REFUSALS + STOPPING + ("message_not_found",),
                  message_id=messages[-1]["content"]["message_id"], idempotency_key=f"rw-{new_id('idem')}",
                  **_fences(case))


def continue_(case, surface):
    case.call("session.continue", surface, allowed=DERIVE_REFUSALS, agent_name="general",
              idempotency_key=f"cont-{new_id('idem')}")


def fork(case, surface):
    case.call("session.fork", surface, allowed=DERIVE_REFUSALS, idempotency_key=f"fork-{new_id('idem')}")


def archive(case, surface):
    case.call("session.archive", surface, allowed=("session_not_stopped",))


def archive_stop(case, surface):
    answer = case.call("session.archive", surface, bound=LADDER_WITHIN, allowed=("session_archive_stop_failed",),
                       stop=True)
    if answer.admitted:
        _verified_means_gone(case, {"verified": answer.result["state"] == "stopped"})


def native_prompt(case, surface):
    """Another session's agent prompts this one through its native tool (compozy__session_prompt); under
    approve-reads the call waits for a person, who allows it: the tool's answer must follow within the bound."""
    other = case.other
    scope = {"session": other["id"], "workspace": other["workspace_id"]}
    arguments = json.dumps({"session_id": case.session["id"], "message": "from another agent"})
    turn = case.must("session.prompt", message=f"[mcp compozy__session_prompt {arguments}]", **scope,
                     **case.ids("tool"))["turn_id"]
    asked = case.wait(lambda: case.must("session.events", turn_id=turn, type="permission", **scope)["events"],
                      "the native tool call's permission")
    allowed = case.call("session.approve", surface, request_id=asked[0]["content"]["request_id"],
                        decision="allow-once", **scope)
    case.wait(lambda: case.must("session.events", turn_id=turn, type="done,error", **scope)["events"],
              "the tool-calling turn's end", 30)
    result = next(e for e in case.must("session.events", turn_id=turn, type="tool_result", **scope)["events"]
                  if (e["content"].get("raw") or {}).get("rawOutput"))
    case.answers.append(_tool_answer(result, allowed, surface))
    document = result["content"]["raw"]["rawOutput"].get("structuredContent") or {}
    if "prompt" in document:
        case.expected.append(Expected(document["prompt"]["message_id"], document["prompt"].get("entry_id"),
                                      "native"))


def _tool_answer(result, approved, surface):
    """The tool's answer as an Answer: from the person's approval to the result the agent reported."""
    answered = datetime.fromisoformat(result["timestamp"].replace("Z", "+00:00")).timestamp()
    output = result["content"]["raw"]["rawOutput"]
    body = output.get("structuredContent") or {}
    return Answer("tool:compozy__session_prompt", surface, max(0.0, answered - approved.finished),
                  code=body.get("code") if output.get("isError") else None, result=body,
                  allowed=frozenset(BUSY_REFUSALS))


@dataclass(frozen=True)
class Input:
    name: str
    send: object
    needs_other: bool = False  # a second session, prepared before the window opens

    def run(self, case, twin=False):
        if not twin or self.needs_other:
            self.send(case, "tcp")
            return
        barrier = threading.Barrier(2)

        def on(surface):
            barrier.wait()
            self.send(case, surface)
        threads = [threading.Thread(target=on, args=(s,)) for s in ("tcp", "socket")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)


INPUTS = (
    Input("prompt", plain), Input("interrupt", interrupt), Input("steer", steer), Input("queue", queue),
    Input("cancel", cancel), Input("stop-wait", stop_wait), Input("stop-nowait", stop_nowait),
    Input("approve", approve), Input("runtime-set", runtime_set), Input("runtime-clear", runtime_clear),
    Input("queue-edit", queue_edit), Input("queue-steer", queue_steer), Input("queue-cancel", queue_cancel),
    Input("rewind", rewind), Input("continue", continue_), Input("fork", fork), Input("archive", archive),
    Input("archive-stop", archive_stop), Input("native-prompt", native_prompt, needs_other=True),
)
