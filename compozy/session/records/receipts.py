"""Idempotent replay, the one way it is written: a request repeated with its idempotency key is
answered from the receipt the first one left (an admission, a rewind receipt or a derivation:
compozy.store.records), and the same key with another request is a conflict.

Layer 4 (session.records). Prompts, queue edits and steers, rewinds, continues and forks replay
through here.
"""

from __future__ import annotations

from typing import Any, Protocol

from compozy.errors import CompozyError


class Receipt(Protocol):
    fingerprint: str
    result: dict | None


def recorded(receipt: Receipt | None, fingerprint: str, conflict: str, **details: Any) -> Receipt | None:
    """The receipt of this very request (None when the key is new); idempotency_conflict (with the
    message `conflict`) when the key was used for another one."""
    if receipt is not None and receipt.fingerprint != fingerprint:
        raise CompozyError("idempotency_conflict", conflict, **details)
    return receipt


def replayed(receipt: Receipt | None) -> dict:
    """The first request's answer again, marked replayed; a conflict when it never completed."""
    if receipt is None or receipt.result is None:
        raise CompozyError("idempotency_conflict", "the first request with this key did not complete")
    return {**receipt.result, "replayed": True}
