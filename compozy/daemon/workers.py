"""Worker threads: one pool for requests, one for event streams and one for native tool calls, so
neither viewers nor agents waiting on the daemon ever starve the owner's control.

Layer 6 (surface). waitress hands each channel with a complete request to one dispatcher; this one
sends a native tool call (a TOOL_SERVER_PATH request, over TCP or the relay's socket) to the tool
pool, a stream-shaped request (a `/stream` path, or `Accept: text/event-stream`) to the stream pool
and everything else to the request pool. A tool call may wait for minutes (held for approval, or a
prompt with `wait`): the app bounds how many each caller has in flight
(session.tools.max_concurrent_calls), and this pool keeps them off the request threads. The stream
and tool pools grow with what is in flight up to a cap: the stream pool to daemon.max_streams plus a
few threads for refusals (the app answers the stream past the cap with stream_limit_reached at once,
compozy/http/sse.py), the tool pool to TOOL_THREADS (past it, calls wait for a thread, never control).
"""

import threading

from waitress.task import ThreadedTaskDispatcher

from compozy.api import TOOL_SERVER_PATH

REQUEST_THREADS = 64  # ordinary requests are short; a stop that waits for its ladder holds one
REFUSAL_THREADS = 16  # stream threads beyond the cap: they only ever answer 503
TOOL_THREADS = 256  # native tool calls in flight across every caller (each caller has a few at most)


def is_tool_call(request):
    return request.path.startswith(TOOL_SERVER_PATH)


def is_stream_request(request):
    """A waitress parsed request that will be answered with an event stream (the native tool server's
    clients accept one too, but are answered with JSON: they are requests)."""
    if is_tool_call(request):
        return False
    return request.path.rstrip("/").endswith("/stream") or "text/event-stream" in request.headers.get("ACCEPT", "")


class WorkerPools:
    """The task dispatcher waitress is given: a request pool, and growing stream and tool pools."""

    def __init__(self, max_streams, request_threads=REQUEST_THREADS, tool_threads=TOOL_THREADS):
        self.requests = ThreadedTaskDispatcher()
        self.requests.set_thread_count(request_threads)
        self.streams = GrowingPool(max_streams + REFUSAL_THREADS)
        self.tools = GrowingPool(tool_threads)

    def set_thread_count(self, count):
        """waitress sizes its own dispatcher with this; the pools here size themselves."""

    def add_task(self, channel):
        request = channel.requests[0] if channel.requests else None
        if request is not None and is_tool_call(request):
            self.tools.add_task(channel)
        elif request is not None and is_stream_request(request):
            self.streams.add_task(channel)
        else:
            self.requests.add_task(channel)

    def shutdown(self, cancel_pending=True, timeout=5):
        self.streams.shutdown(cancel_pending, timeout)
        self.tools.shutdown(cancel_pending, timeout)
        return self.requests.shutdown(cancel_pending, timeout)


class GrowingPool:
    """A pool with a thread for each task in flight, up to a cap (then tasks wait for a thread)."""

    def __init__(self, cap):
        self.dispatcher = ThreadedTaskDispatcher()
        self._cap, self._threads, self._in_flight = cap, 0, 0
        self._lock = threading.Lock()

    def add_task(self, channel):
        with self._lock:
            self._in_flight += 1
            if self._in_flight > self._threads and self._threads < self._cap:
                self._threads = min(self._cap, self._in_flight)
                self.dispatcher.set_thread_count(self._threads)
        self.dispatcher.add_task(_Counted(channel, self._finished))

    def _finished(self):
        with self._lock:
            self._in_flight -= 1

    def shutdown(self, cancel_pending=True, timeout=5):
        return self.dispatcher.shutdown(cancel_pending, timeout)


class _Counted:
    """A channel's turn on a pool's thread, counted out when it ends."""

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
        return f"<counted task {self.channel!r}>"
