"""Crash bundles and failure objects: bounded, redacted evidence of an agent process that died or was refused.

Layer 4. Bundle schema compozy.session_crash_bundle.v2: the agent's stderr (its last 64 KiB, escape
sequences removed), its JSON-RPC error's data (`agent_error`) and its process. A failure object is what
the session keeps: {kind, summary, crash_bundle_path, agent_error?, stderr_tail?}.
"""

import json
import logging

from compozy.clock import now_iso
from compozy.paths import write_private_file
from compozy.redact import bounded, redact, redact_env
from compozy.states import FailureKind

log = logging.getLogger("compozy.crash")

SCHEMA = "compozy.session_crash_bundle.v2"
MAX_STDERR = 64 * 1024
MAX_ERROR = 4 * 1024
SUMMARY_CHARS = 500
STDERR_LINES = 5  # of a failure object; the bundle keeps the whole tail


def write_bundle(home, session, runtime, failure_kind, error_text, agent_error=None):
    """Write the bundle and return its path (None if it cannot be written; the failure stays recorded)."""
    process = runtime.process if runtime else None
    identity = process.identity.to_dict() if process and process.identity else None
    provider = runtime.provider if runtime else None
    secrets = {**provider.env, **runtime.identity} if provider else None
    bundle = {
        "schema": SCHEMA,
        "created_at": now_iso(),
        "session": {"id": session.id, "workspace_id": session.record.workspace_id,
                    "agent_name": session.record.agent_name, "type": session.record.type,
                    "acp_session_id": runtime.acp_session_id if runtime else None},
        "provider": {"name": provider.name if provider else None,
                     "command": [redact(part) for part in provider.command] if provider else None,
                     "env": redact_env(provider.env) if provider else None,
                     "effective": runtime.effective if runtime else None},
        "failure_kind": failure_kind,
        "process": {**(identity or {}), "exit_code": process.exit_code if process else None,
                    "signal": process.exit_signal if process else None},
        "error": bounded(redact(error_text, secrets), MAX_ERROR),
        "agent_error": agent_error,
        "stderr": bounded(redact(process.stderr_tail()[-MAX_STDERR:], secrets), MAX_STDERR) if process else None,
    }
    stamp = bundle["created_at"].replace(":", "").replace(".", "")
    path = home.crash_bundles_dir / f"{session.id}-{stamp}.json"
    try:
        write_private_file(path, json.dumps(bundle, indent=2))
    except OSError as exc:
        log.error("cannot write crash bundle %s: %s", path, exc)
        return None
    return str(path)


def refusal_failure(home, session, refusal):
    """The failure object of a bind the agent failed (its handshake, opening or login), with its evidence (its
    error's data, its stderr) and a crash bundle of it; None for a choice it does not offer (a model)."""
    evidence = refusal.evidence
    if refusal.runtime is None or not refusal.agent_fault:
        return None
    error = refusal.error
    bundle = write_bundle(home, session, refusal.runtime, str(refusal.failure_kind), error.message,
                          evidence.get("agent_error"))
    return {"kind": str(refusal.failure_kind), "summary": error.message[:SUMMARY_CHARS], "code": error.code,
            "crash_bundle_path": bundle, **evidence}


def exit_failure(home, session, runtime, error_text):
    """The failure object of an agent process that died (a crash bundle written): its kind is process_exit."""
    kind = FailureKind.PROCESS_EXIT.value
    failure = {"kind": kind, "summary": error_text[:SUMMARY_CHARS],
               "crash_bundle_path": write_bundle(home, session, runtime, kind, error_text)}
    tail = runtime.process.stderr_tail(STDERR_LINES).splitlines() if runtime and runtime.process else []
    if tail:
        failure["stderr_tail"] = tail
    return failure


def exit_summary(runtime):
    process = runtime.process if runtime else None
    if process is None:
        return "agent process is gone"
    if process.exit_signal:
        how = f"was killed by signal {process.exit_signal}"
    elif process.exit_code is not None:
        how = f"exited with status {process.exit_code}"
    else:
        how = "closed its output"
    tail = process.stderr_tail(2).splitlines()
    text = f"agent process {how}" + (f"; stderr: {' / '.join(tail)}" if tail else "")
    return redact(text, {**runtime.provider.env, **runtime.identity})[:SUMMARY_CHARS]


def stderr_from_bundle(path):
    """The stderr a crash bundle kept, or None."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError, TypeError):
        return None
    return document.get("stderr") if isinstance(document, dict) else None
