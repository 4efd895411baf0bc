"""The agent's stdout, counted: what it had written by a given moment, and whether that is handled.

Layer 3. An agent reports a tool's result on stdout and then calls a native tool over MCP; the two
reach the daemon on different threads, so the call could be recorded before the result the agent
wrote first. Before a native tool call is decided, the daemon waits (briefly) until every byte the
agent had written to stdout by then has been read and handled, so the store keeps the agent's order.
"""

import fcntl
import os
import select
import struct
import termios
import threading


class StdoutLedger:
    """Reads of one pipe, each counted with the bytes still unread, so a waiter can name a point."""

    def __init__(self, fd):
        self.fd = fd
        self._changed = threading.Condition()
        self._read = self._handled = 0
        self._closed = False
        self._reader = None
        self._poller = select.poll()  # select() fails on descriptors past 1,024
        self._poller.register(fd, select.POLLIN)

    def read(self, size):
        """Block until the pipe has data or ends, then read it; b"" at its end."""
        self._reader = threading.get_ident()
        try:
            self._poller.poll()  # waited without the lock, so that settle() can look meanwhile
        except OSError:
            return b""
        with self._changed:  # the read and its count are one step for settle()
            try:
                data = os.read(self.fd, size)
            except OSError:
                data = b""
            self._read += len(data)
        return data

    def handled(self, data):
        with self._changed:
            self._handled += len(data)
            self._changed.notify_all()

    def close(self):
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def settle(self, timeout):
        """Wait until what the pipe held at this moment has been read and handled (False on timeout)."""
        if threading.get_ident() == self._reader:
            return True  # the reader itself asked: what it holds is being handled by this very call
        with self._changed:
            if self._closed:
                return True
            try:
                target = self._read + unread(self.fd)
            except OSError:
                return True
            return self._changed.wait_for(lambda: self._closed or self._handled >= target, timeout)


def unread(fd):
    """Bytes waiting unread in a pipe."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
