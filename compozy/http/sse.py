"""Server-Sent Events for Flask responses: framing, the open-stream cap, and noticing a gone viewer.

Layer 6 (surface). Each (event, data) pair becomes one frame; (None, None) is an idle tick of the
source (about once a second): a `: keepalive` comment goes out after KEEPALIVE_SECONDS without a
frame, and a tick is when a viewer that went away is noticed, so its worker thread is freed within
about a second rather than at the next keepalive. The generator runs on a stream worker thread
(compozy/daemon/workers.py) for the stream's lifetime.
"""

import threading
from collections import OrderedDict

from flask import Response, current_app, request

from compozy.clock import monotonic
from compozy.errors import CompozyError
from compozy.store.storedrecord import StoredRecord
from compozy.text import compact_json

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
KEEPALIVE_SECONDS = 20.0
RETRY_AFTER_SECONDS = 5
EXTENSION = "compozy.streams"


class StreamSlots:
    """At most `cap` event streams open at once; one more is refused before any work is done."""

    def __init__(self, cap):
        self.cap = cap
        self.open = 0
        self._lock = threading.Lock()

    def claim(self):
        with self._lock:
            if self.open >= self.cap:
                raise CompozyError("stream_limit_reached", f"{self.cap} event streams are open (daemon.max_streams)",
                                   retry_after=RETRY_AFTER_SECONDS, max_streams=self.cap)
            self.open += 1
        return _Slot(self)

    def _release(self):
        with self._lock:
            self.open -= 1


class _Slot:
    def __init__(self, slots):
        self._slots, self._held = slots, True

    def release(self):
        if self._held:
            self._held = False
            self._slots._release()


_encode = compact_json
SHARED_FRAMES = 1024


class _Rendered:
    """Frames of the newest published items that are no StoredRecord (catalog changes), rendered once for
    every viewer of the same item; a StoredRecord keeps its own JSON, built from its row's content text."""

    def __init__(self, capacity=SHARED_FRAMES):
        self._frames = OrderedDict()  # id(record) -> (record, frame); the record kept so its id stays its own
        self._capacity = capacity
        self._lock = threading.Lock()

    def frame(self, event, data):
        if data.__class__ is StoredRecord:
            return data.frame() if event == data["type"] else frame(event, data)
        key = id(data)
        with self._lock:
            found = self._frames.get(key)
        if found is not None and found[0] is data:
            return found[1]
        text = frame(event, data)
        with self._lock:
            self._frames[key] = (data, text)
            while len(self._frames) > self._capacity:
                self._frames.popitem(last=False)
        return text


def frame(event, data):
    sequence = data.get("sequence") if isinstance(data, dict) else None
    head = f"id: {sequence}\n" if sequence is not None else ""
    text = data.json() if data.__class__ is StoredRecord else _encode(data)
    return f"{head}event: {event}\ndata: {text}\n\n"


RENDERED = _Rendered()


def sse_response(open_pairs):
    """A stream of the pairs `open_pairs()` returns, opened only once a slot is claimed (so a refused
    stream has done nothing, not even admitted a prompt)."""
    slot = current_app.extensions[EXTENSION].claim()
    try:
        pairs = open_pairs()
    except BaseException:
        slot.release()
        raise
    gone = request.environ.get("waitress.client_disconnected", lambda: False)
    response = Response(_frames(pairs, gone), mimetype="text/event-stream", headers=HEADERS)
    response.call_on_close(slot.release)
    return response


def _frames(pairs, gone):
    yield ": stream open\n\n"
    quiet_since = monotonic()
    for item in pairs:
        if isinstance(item, list):  # one feed batch: one write (waitress sends each yielded chunk alone)
            if item:
                yield "".join([RENDERED.frame(event, data) for event, data in item])
                quiet_since = monotonic()
            continue
        event, data = item
        if event is not None:
            yield RENDERED.frame(event, data)
            quiet_since = monotonic()
        elif gone():
            return
        elif monotonic() - quiet_since >= KEEPALIVE_SECONDS:
            yield ": keepalive\n\n"
            quiet_since = monotonic()


def batches_as_pairs(batches):
    """Each batch of records as a list of (type, record) pairs; an idle tick as (None, None)."""
    for batch in batches:
        yield [(record["type"], record) for record in batch] if batch else (None, None)


def wants_stream(request):
    return "text/event-stream" in (request.headers.get("Accept") or "")
