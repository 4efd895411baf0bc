"""In-memory fan-out of committed records to live viewers.

Layer 4. Publishers call publish() only after their records are committed; a viewer that falls
behind the ring reads the gap from the durable store instead of blocking the publisher.
"""

import threading
from collections import deque


class Feed:
    """A bounded ring of (sequence, item) with a condition viewers wait on."""

    def __init__(self, start=0, capacity=2048):
        self._ring = deque(maxlen=capacity)
        self._cond = threading.Condition()
        self._last = start
        self._closed = False

    @property
    def last_sequence(self):
        return self._last

    @property
    def closed(self):
        return self._closed

    def publish(self, items):
        """Items that carry their own "sequence", in its order."""
        if not items:
            return
        with self._cond:
            self._ring.extend([(item["sequence"], item) for item in items])
            self._last = self._ring[-1][0]
            self._cond.notify_all()

    def publish_counted(self, item):
        """For feeds without their own sequence (the catalog stream): the item gets the next one."""
        with self._cond:
            self._last += 1
            item = dict(item, sequence=self._last)
            self._ring.append((self._last, item))
            self._cond.notify_all()
            return self._last

    def forget(self) -> None:
        """Drop the ring (a rewind archived part of it): late viewers read the store, which holds only
        what stays active."""
        with self._cond:
            self._ring.clear()

    def trim(self, keep: int) -> None:
        """Keep only the newest `keep` items: a session between turns holds little in memory, and a
        viewer further behind reads the gap from the store (after() answers None for it)."""
        with self._cond:
            while len(self._ring) > keep:
                self._ring.popleft()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def after(self, sequence, timeout):
        """Items newer than sequence; [] after timeout; None when the ring no longer covers the gap."""
        with self._cond:
            self._cond.wait_for(lambda: self._last > sequence or self._closed, timeout)
            if self._last <= sequence:
                return []
            oldest = self._ring[0][0] if self._ring else self._last + 1
            if oldest > sequence + 1:
                return None
            newer = []
            for seq, item in reversed(self._ring):  # from the newest: a viewer is usually a few behind
                if seq <= sequence:
                    break
                newer.append(item)
            newer.reverse()
            return newer


def attention_changed(feed, record, previous):
    """Tell catalog viewers a session's attention was raised, changed or cleared."""
    feed.publish_counted({"type": "session_attention_changed", "session_id": record.id,
                          "workspace_id": record.workspace_id, "attention": record.attention, "previous": previous})


def catalog_changed(feed, change, record):
    """Tell catalog viewers a session row was upserted or deleted."""
    feed.publish_counted({"type": "session_catalog_changed", "change": change, "session_id": record.id,
                          "workspace_id": record.workspace_id})
