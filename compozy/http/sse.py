"""Server-Sent Events framing for Flask responses.

Layer 6 (surface). Each (event, data) pair becomes one frame; (None, None) becomes a keepalive
comment. The generator runs on a waitress worker thread for the stream's lifetime.
"""

import json

from flask import Response

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def frame(event, data):
    sequence = data.get("sequence") if isinstance(data, dict) else None
    head = f"id: {sequence}\n" if sequence is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def sse_response(pairs):
    def generate():
        yield ": stream open\n\n"
        for event, data in pairs:
            yield ": keepalive\n\n" if event is None else frame(event, data)
    return Response(generate(), mimetype="text/event-stream", headers=HEADERS)


def records_as_pairs(records):
    for record in records:
        yield (None, None) if record is None else (record["type"], record)


def wants_stream(request):
    return "text/event-stream" in (request.headers.get("Accept") or "")
