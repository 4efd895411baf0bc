"""Next-prompt runtime intent (runtime.selected) under optimistic concurrency.

Layer 4. Selecting never starts or reconfigures an agent; the next prompt applies it.
"""

from compozy import validate as v
from compozy.errors import CompozyError, invalid
from compozy.session.records.snapshots import check_snapshot


def _check_revision(session, expected):
    current = int(session.record.runtime.selection_revision or 0)
    if expected != current:
        raise CompozyError("revision_conflict", f"expected_revision {expected} is stale; the selection is at "
                           f"revision {current}", current_revision=current)
    return current


def set_selection(session, body):
    body = v.check_body(body, v.SELECTION_FIELDS)
    snapshot = check_snapshot(body["runtime"])
    if not snapshot:
        raise invalid("runtime must set at least one field")
    with session.lock:
        revision = _check_revision(session, body["expected_revision"])
        session.update_runtime(selected=snapshot, selection_revision=revision + 1)
    return session.record


def clear_selection(session, expected_revision):
    if expected_revision is None:
        raise invalid("expected_revision is required", field="expected_revision")
    with session.lock:
        revision = _check_revision(session, expected_revision)
        session.update_runtime(selected=None, selection_revision=revision + 1)
    return session.record
