"""What a failing agent leaves as evidence: the data of its JSON-RPC errors, bounded and redacted.

Layer 3 (the ACP seam). An agent often puts the real reason of an error only in `data` (Claude's adapter
answers `Internal error` with `data.details` = `Claude Code process exited with code 1`): that data is kept
as `agent_error` beside the error, and its readable part is added to the message.
"""

from compozy.acp.driver import AcpError
from compozy.redact import redact
from compozy.text import compact_json, one_line

DATA_LIMIT = 4096  # characters of an error's data, as JSON, kept as evidence
REASON_LIMIT = 300  # characters of the data's readable part added to a message
REASON_KEYS = ("details", "detail", "message", "error", "reason")


def agent_error(exc, env=None):
    """{"code", "message", "data"?} of an agent's JSON-RPC error (None for anything else), its strings
    redacted with the agent's environment and its data bounded."""
    if not isinstance(exc, AcpError):
        return None
    error = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        text = compact_json(exc.data)
        error["data"] = exc.data if len(text) <= DATA_LIMIT else text[:DATA_LIMIT] + "...(truncated)"
    return _redacted(error, env)


def described(exc, env=None):
    """The error as a message: `Internal error (-32603): <the readable part of its data>`."""
    text = str(exc)
    reason = reason_of(exc.data) if isinstance(exc, AcpError) else None
    if reason and reason not in text:
        text += ": " + reason
    return redact(text, env)


def reason_of(data):
    """The readable part of an error's data: a string, a reason-like field, else its JSON (bounded)."""
    if data is None:
        return None
    if isinstance(data, dict):
        found = next((data[key] for key in REASON_KEYS if isinstance(data.get(key), str) and data[key].strip()), None)
        data = found if found is not None else data
    text = data if isinstance(data, str) else compact_json(data)
    text = one_line(text.strip())
    return text if len(text) <= REASON_LIMIT else text[:REASON_LIMIT] + "..."


def _redacted(value, env):
    if isinstance(value, str):
        return redact(value, env)
    if isinstance(value, dict):
        return {key: _redacted(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, env) for item in value]
    return value
