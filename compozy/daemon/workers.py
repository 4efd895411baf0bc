"""Worker threads: one pool for requests and one for event streams, so viewers never starve control.

Layer 6 (surface). waitress hands each channel with a complete request to one dispatcher; this one
sends a stream-shaped request (a `/stream` path, or `Accept: text/event-stream`) to the stream pool
and everything else to the request pool. The stream pool grows with the streams in flight up to
daemon.max_streams plus a few threads for refusals: the app answers the stream past the cap with
stream_limit_reached at once (compozy/http/sse.py), so a refusal never waits behind open streams.
"""

import threading

from waitress.task import ThreadedTaskDispatcher

from compozy.api import TOOL_SERVER_PATH

REQUEST_THREADS = 64  # ordinary requests are short; a stop or a native tool waiting on a turn holds one
REFUSAL_THREADS = 16  # stream threads beyond the cap: they only ever answer 503


def is_stream_request(request):
    """A waitress parsed request that will be answered with an event stream (the native tool server's
    clients accept one too, but are answered with JSON: they are requests)."""
    if request.path.startswith(TOOL_SERVER_PATH):
        return False
    return request.path.rstrip("/").endswith("/stream") or "text/event-stream" in request.headers.get("ACCEPT", "")


class WorkerPools:
    """The task dispatcher waitress is given: a request pool and a growing stream pool."""

    def __init__(self, max_streams, request_threads=REQUEST_THREADS):
        self.requests = ThreadedTaskDispatcher()
        self.requests.set_thread_count(request_threads)
        self.streams = ThreadedTaskDispatcher()
        self._stream_thread_cap = max_streams + REFUSAL_THREADS
        self._stream_threads = 0
        self._in_flight = 0
        self._lock = threading.Lock()

    def set_thread_count(self, count):
        """waitress sizes its own dispatcher with this; the pools here size themselves."""

    def add_task(self, channel):
        if not channel.requests or not is_stream_request(channel.requests[0]):
            self.requests.add_task(channel)
            return
        with self._lock:
            self._in_flight += 1
            if self._in_flight > self._stream_threads and self._stream_threads < self._stream_thread_cap:
                self._stream_threads = min(self._stream_thread_cap, self._in_flight)
                self.streams.set_thread_count(self._stream_threads)
        self.streams.add_task(_Counted(channel, self._finished))

    def _finished(self):
        with self._lock:
            self._in_flight -= 1

    def shutdown(self, cancel_pending=True, timeout=5):
        self.streams.shutdown(cancel_pending, timeout)
        return self.requests.shutdown(cancel_pending, timeout)


class _Counted:
    """A channel's turn on a stream thread, counted out when it ends."""

    def __init__(self, channel, finished):
        self.channel, self._finished = channel, finished

    def service(self):
        try:
            self.channel.service()
        finally:
            self._finished()

    def cancel(self):
        try:
            self.channel.cancel()
        finally:
            self._finished()

    def __repr__(self):
        return f"<stream task {self.channel!r}>"
