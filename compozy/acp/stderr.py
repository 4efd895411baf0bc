"""An agent's stderr: drained on its own thread into a bounded ring, read back as evidence.

Layer 3. A chatty agent never blocks on a full pipe; the last 64 KiB are kept. Read back, the text is
plain (escape sequences removed, other controls escaped) with the secret values of the agent's
environment redacted, and holds whatever the agent wrote before an answer the daemon just read.
"""

import os
import select
import threading
import time
from collections import deque

from compozy.acp.output import unread
from compozy.clock import monotonic
from compozy.redact import redact
from compozy.text import terminal_output

READ_CHUNK = 65536
RING_BYTES = 64 * 1024
SETTLE_SECONDS = 0.5  # at most this long for stderr written before now to be read
SETTLE_POLL = 0.01


class StderrRing:
    def __init__(self, pipe, env):
        self.pipe, self.env = pipe, env
        self._chunks = deque()
        self._size = 0
        self._done = False
        self._lock = threading.Lock()

    def drain(self):
        """The thread's loop: read until the agent closes its stderr."""
        fd = self.pipe.fileno()
        poller = select.poll()  # select() fails on descriptors past 1,024
        poller.register(fd, select.POLLIN)
        while True:
            poller.poll()  # waited without the lock, so that tail() can look meanwhile
            with self._lock:  # a read and its keeping are one step for _settled()
                try:
                    data = os.read(fd, READ_CHUNK)
                except OSError:
                    data = b""
                if not data:
                    self._done = True
                    _close(self.pipe)
                    return
                self._chunks.append(data)
                self._size += len(data)
                while self._size - len(self._chunks[0]) >= RING_BYTES:
                    self._size -= len(self._chunks.popleft())  # what stays still holds the last 64 KiB

    def tail(self, lines=None):
        """The last 64 KiB (or the last `lines` lines) as plain, redacted text."""
        deadline = monotonic() + SETTLE_SECONDS
        while not self._settled() and monotonic() < deadline:
            time.sleep(SETTLE_POLL)
        with self._lock:
            data = b"".join(self._chunks)[-RING_BYTES:]
        text = terminal_output(data.decode("utf-8", "replace"))
        if lines is not None:
            text = "\n".join(text.strip().splitlines()[-lines:])
        return redact(text, self.env)

    def _settled(self):
        """True when nothing the agent wrote to stderr waits in the pipe unread."""
        with self._lock:
            if self._done:
                return True
            try:
                return unread(self.pipe.fileno()) == 0
            except (OSError, ValueError):
                return True


def _close(pipe):
    try:
        pipe.close()
    except (OSError, ValueError):
        pass
