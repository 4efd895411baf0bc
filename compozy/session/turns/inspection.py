"""What `session inspect` adds about the agent: its stderr and the usage each turn recorded.

Layer 4. The stderr is the serving process's, else the last process that served or was refused (kept in
memory), else the one the session's crash bundle kept; each is the last 64 KiB, plain and redacted.
"""

from compozy.session.lifecycle.crash import stderr_from_bundle
from compozy.session.turns.usage import totals


def agent_evidence(live, record, log):
    return {"agent_stderr": agent_stderr(live, record), "usage": usage_view(log)}


def agent_stderr(live, record):
    """{"source", "provider"?, "pid"?, "text"} or None when nothing was kept."""
    runtime = live.runtime if live is not None and live.runtime is not None else (live.last_agent if live else None)
    if runtime is not None and runtime.process is not None and runtime.process.spawn is not None:
        return {"source": "serving" if live.runtime is runtime else "last_agent", "provider": runtime.provider.name,
                "pid": runtime.process.pid, "text": runtime.process.stderr_tail()}
    path = (record.failure or {}).get("crash_bundle_path")
    text = stderr_from_bundle(path) if path else None
    return {"source": "crash_bundle", "path": path, "text": text} if text is not None else None


def usage_view(log):
    """Each turn's recorded usage and their sum."""
    turns = [{"turn_id": row["turn_id"], **row["usage"]} for row in log.usage()]
    return {"turns": turns, "total": totals(turns)}
