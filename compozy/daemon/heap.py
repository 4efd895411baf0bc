"""The daemon's garbage collector settings, applied once it has booted.

Layer 6. A streaming turn allocates a few short-lived containers per chunk (the decoded line, its
record and content), and every record lives on in a feed ring for a while, so CPython's default
collector ran a young-generation pass every 700 allocations and, every few turns, a full pass over
everything the daemon ever imported (tens of milliseconds, a p99 spike for every viewer). What the
boot built lives as long as the daemon: it is frozen out of every later collection, and young passes
run every GEN0_THRESHOLD allocations instead (measured in docs/performance.md).
"""

import gc

GEN0_THRESHOLD = 10_000


def settle():
    """Freeze what the boot allocated and space out the young collections."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, older, oldest)
