"""SSE viewers in a process of their own, for bench_fanout.py: one thread, one selector, raw sockets.

Run as `python3 bench/viewers.py` with a JSON document on stdin: {"host", "port", "token", "paths": [...]}
(token: the daemon's secret, sent as a bearer token).
Each path is opened as `GET path` with `Accept: text/event-stream`; once every response's headers
have arrived, "ready" is printed. Then whatever a socket holds is read as soon as it is readable
and stamped with the wall clock; a viewer ends at its stream's `event: done` (or when the daemon
closes it). At the end one JSON line is printed: per viewer, its frames as [sequence, event,
seconds from the event's timestamp to the read that completed the frame], and any error.

Viewers in threads of the benchmark's own Python measured the benchmark too: 40 threads and the
test's own work took turns on one GIL, and a frame waited for its thread's turn before it was
stamped. Here a read is stamped by a process that does nothing else; parsing comes after the run.
"""

import bisect
import json
import selectors
import socket
import sys
import time
from datetime import datetime

DEADLINE_SECONDS = 300.0
HEADERS_END = b"\r\n\r\n"


class Viewer:
    def __init__(self, host, port, path, token):
        self.sock = socket.create_connection((host, port), timeout=60)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
                          f"Authorization: Bearer {token}\r\n\r\n".encode())
        self.reads = []  # (wall clock, bytes) of every read, headers included
        self.tail = b""
        self.error = None

    def wait_headers(self):
        received = b""
        while HEADERS_END not in received:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the daemon closed the stream before its headers")
            received += data
            self.reads.append((time.time(), data))
        self.sock.setblocking(False)

    def read(self):
        """False once the stream is over."""
        data = self.sock.recv(65536)
        if not data:
            return False
        self.reads.append((time.time(), data))
        self.tail = (self.tail + data)[-4096:]
        return b"event: done" not in self.tail

    def frames(self):
        raw = b"".join(data for _, data in self.reads)
        ends = []
        total = 0
        for _, data in self.reads:
            total += len(data)
            ends.append(total)
        head_end = raw.find(HEADERS_END) + len(HEADERS_END)
        head = raw[:head_end].lower()
        segments = _chunks(raw, head_end) if b"transfer-encoding: chunked" in head else [(raw[head_end:], head_end)]
        payload = b"".join(segment for segment, _ in segments)
        starts, offset = [], 0  # where each segment starts in the payload
        for segment, _ in segments:
            starts.append(offset)
            offset += len(segment)
        found, start = [], 0
        while (end := payload.find(b"\n\n", start)) >= 0:
            block, start = payload[start:end], end + 2
            index = bisect.bisect_right(starts, end + 1) - 1  # the segment holding the frame's last byte
            raw_offset = segments[index][1] + (end + 1 - starts[index])
            stamp = self.reads[bisect.bisect_right(ends, raw_offset)][0]
            frame = _frame(block, stamp)
            if frame is not None:
                found.append(frame)
        return found


def _chunks(raw, position):
    """The payloads of an HTTP/1.1 chunked body, each with its offset in raw."""
    segments = []
    while (line_end := raw.find(b"\r\n", position)) >= 0:
        size = int(raw[position:line_end].split(b";")[0], 16)
        if size == 0:
            break
        start = line_end + 2
        segments.append((raw[start:start + size], start))
        position = start + size + 2
    return segments


def _frame(block, stamp):
    fields = dict(line.split(": ", 1) for line in block.decode().splitlines() if ": " in line)
    if "data" not in fields or "id" not in fields:
        return None
    record = json.loads(fields["data"])
    committed = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00")).timestamp()
    return [int(fields["id"]), fields.get("event"), stamp - committed]


def main():
    request = json.loads(sys.stdin.readline())
    viewers = [Viewer(request["host"], request["port"], path, request["token"]) for path in request["paths"]]
    for viewer in viewers:
        viewer.wait_headers()
    print("ready", flush=True)
    selector = selectors.DefaultSelector()
    for viewer in viewers:
        selector.register(viewer.sock, selectors.EVENT_READ, viewer)
    deadline = time.monotonic() + DEADLINE_SECONDS
    while selector.get_map() and time.monotonic() < deadline:
        for key, _ in selector.select(1.0):
            viewer = key.data
            try:
                going = viewer.read()
            except BlockingIOError:
                continue
            except OSError as exc:
                viewer.error, going = repr(exc), False
            if not going:
                selector.unregister(viewer.sock)
                viewer.sock.close()
    for key in list(selector.get_map().values()):
        key.data.error = key.data.error or "no done frame before the deadline"
        key.data.sock.close()
    print(json.dumps([{"frames": viewer.frames(), "error": viewer.error} for viewer in viewers]), flush=True)


if __name__ == "__main__":
    main()
