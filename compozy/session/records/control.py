"""The catalog's control rows change state only along their tables: queue entries, admissions and
permission interactions.

Layer 4. Each change is an edge of the QUEUE, ADMISSION or INTERACTION table (compozy.states) and a
compare-and-set on the row, so a row that is no longer where its caller believes is never moved.
"""

from __future__ import annotations

from typing import Any

from compozy.states import ADMISSION, INTERACTION, QUEUE, AdmissionState, InteractionState, QueueStatus
from compozy.store.catalog import Catalog


def move_entry(catalog: Catalog, entry_id: str, old: QueueStatus, new: QueueStatus, repair: bool = False,
               **fields: Any) -> None:
    new = QUEUE.check(old, new, repair)
    if not catalog.update_entry(entry_id, expected_status=old, status=new.value, **fields):
        raise AssertionError(f"queue entry {entry_id} is no longer {old}")


def move_admission(catalog: Catalog, admission_id: str, old: AdmissionState, new: AdmissionState,
                   repair: bool = False, **fields: Any) -> None:
    new = ADMISSION.check(old, new, repair)
    if new == AdmissionState.WITHDRAWN:  # nothing of it persists: a retry runs again
        changed = catalog.delete_admission(admission_id, expected_state=old)
    else:
        changed = catalog.update_admission(admission_id, expected_state=old, state=new.value, **fields)
    if not changed:
        raise AssertionError(f"admission {admission_id} is no longer {old}")


def settle_interaction(catalog: Catalog, interaction_id: str, new: InteractionState,
                       decision: str | None = None) -> bool:
    """A held permission request answered (pending -> resolved, timed_out or canceled); False when it
    was no longer pending (a second answer raced it)."""
    new = INTERACTION.check(InteractionState.PENDING, new)
    return catalog.resolve_interaction(interaction_id, new.value, decision)


def orphan_interactions(catalog: Catalog, session_id: str | None = None) -> int:
    """Boot repair (of every session, or of one an adoption carried in): a request still pending after an
    unclean exit has no agent waiting on it any more."""
    new = INTERACTION.check(InteractionState.PENDING, InteractionState.ORPHANED, repair=True)
    return catalog.orphan_pending_interactions(new.value, session_id)
