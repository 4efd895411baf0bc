"""Next-prompt runtime intent (runtime.selected) under optimistic concurrency.

Layer 4. Selecting never starts or reconfigures an agent; the next prompt applies it.
"""

from compozy.acp.options import offered_models
from compozy.errors import CompozyError, invalid
from compozy.session.records.snapshots import check_snapshot


def _check_revision(session, expected):
    current = int(session.record.runtime.selection_revision or 0)
    if expected != current:
        raise CompozyError("revision_conflict", f"expected_revision {expected} is stale; the selection is at "
                           f"revision {current}", current_revision=current)
    return current


def set_selection(session, body):
    snapshot = check_snapshot(body["runtime"])
    if not snapshot:
        raise invalid("runtime must set at least one field")
    with session.lock:
        revision = _check_revision(session, body["expected_revision"])
        _check_offered(session.runtime, snapshot)
        session.update_runtime(selected=snapshot, selection_revision=revision + 1)
    return session.record


def _check_offered(runtime, snapshot):
    """A model the live agent does not offer is refused now, not at every later prompt. Without a live
    process of that provider nothing is known yet: the next prompt decides."""
    model = snapshot.get("model")
    if not model or runtime is None or snapshot.get("provider", runtime.provider.name) != runtime.provider.name:
        return
    offered = offered_models(runtime)
    if offered is not None and model not in offered:
        raise CompozyError("model_unavailable", f"model {model!r} is not offered by provider "
                           f"{runtime.provider.name!r} (offered: {', '.join(map(str, offered))}); the selection is "
                           f"unchanged", model=model, offered=offered)


def clear_selection(session, expected_revision):
    if expected_revision is None:
        raise invalid("expected_revision is required", field="expected_revision")
    with session.lock:
        revision = _check_revision(session, expected_revision)
        session.update_runtime(selected=None, selection_revision=revision + 1)
    return session.record
