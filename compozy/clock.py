"""The only place that reads time: wall time for records, monotonic time for deadlines.

Layer 0: stdlib only.
"""

import time
from datetime import datetime, timezone


def now_iso():
    """RFC 3339 UTC with microseconds; sorts lexically in time order."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_from_epoch(seconds):
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def epoch_from_iso(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def wall():
    return time.time()


def monotonic():
    return time.monotonic()


class Clock:
    """Time as the daemon's timers read it: the stop ladder, recovery backoff and supervision take
    one of these (unit tests give them a fake they advance by hand)."""

    def monotonic(self):
        return time.monotonic()

    def wall(self):
        return time.time()


SYSTEM = Clock()
