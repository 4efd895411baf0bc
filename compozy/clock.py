"""The only place that reads time: wall time for records, monotonic time for deadlines (checked by
tests/unit/test_owners.py). Every read goes through a Clock: services.clock in the domain (unit tests
give it a fake), SYSTEM for the stores and the surfaces.

Layer 0: stdlib only.
"""

import time
from datetime import datetime, timezone


def now_iso():
    """RFC 3339 UTC with microseconds, sorting lexically in time order: SYSTEM's wall time."""
    return SYSTEM.now_iso()


def iso_from_epoch(seconds):
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def epoch_from_iso(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def wall():
    return SYSTEM.wall()


def monotonic():
    return SYSTEM.monotonic()


class Clock:
    """Time as the daemon's timers read it: the stop ladder, recovery backoff and supervision take
    one of these (unit tests give them a fake they advance by hand)."""

    def monotonic(self):
        return time.monotonic()

    def wall(self):
        return time.time()

    def now_iso(self):
        return iso_from_epoch(self.wall())


SYSTEM = Clock()
