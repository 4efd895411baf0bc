"""Crash bundles: bounded, redacted, owner-only JSON evidence of an agent process that died.

Layer 4. Schema compozy.session_crash_bundle.v2.
"""

import json
import logging

from compozy.clock import now_iso
from compozy.paths import write_private_file
from compozy.redact import bounded, redact, redact_env

log = logging.getLogger("compozy.crash")

SCHEMA = "compozy.session_crash_bundle.v2"
MAX_STDERR = 16 * 1024
MAX_ERROR = 4 * 1024


def write_bundle(home, session, runtime, failure_kind, error_text):
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
    tail = process.stderr_tail().strip().splitlines()[-2:]
    text = f"agent process {how}" + (f"; stderr: {' / '.join(tail)}" if tail else "")
    return redact(text, {**runtime.provider.env, **runtime.identity})[:500]
