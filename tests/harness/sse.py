"""One Server-Sent Events connection to a real daemon, read frame by frame (tests/test_streams.py,
tests/test_torture.py)."""

import http.client
import json

from tests.harness.daemon import auth_for

READ_TIMEOUT = 20.0


class Viewer:
    """One SSE connection; frames() yields {"id", "event", "data"} dicts (comments skipped). It carries the
    secret of the daemon on that port (one the harness started) unless headers name an Authorization."""

    def __init__(self, port, path, headers=None, method="GET", body=None, timeout=READ_TIMEOUT):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        headers = {**auth_for(port), **(headers or {})}
        if body is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(body)
        try:
            self.connection.connect()
            self.sock = self.connection.sock  # kept: http.client hands the socket to the response
            self.connection.request(method, path, body=body, headers=headers)
            self.response = self.connection.getresponse()
        except BaseException:
            self.connection.close()
            raise
        self.status = self.response.status
        self.content_type = self.response.getheader("Content-Type") or ""

    def frames(self):
        frame = {}
        while True:
            raw = self.response.readline()
            if not raw:
                return
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line:
                if "data" in frame:
                    frame["data"] = json.loads(frame["data"])
                    yield frame
                frame = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            frame[name] = frame[name] + "\n" + value if name == "data" and name in frame else value

    def read_until(self, stop, limit=10_000):
        """Frames up to and including the first for which stop(frame) is true."""
        seen = []
        for frame in self.frames():
            seen.append(frame)
            if stop(frame) or len(seen) >= limit:
                return seen
        raise AssertionError(f"stream ended before the expected frame; got {[f.get('event') for f in seen]}")

    def assert_quiet(self, seconds=0.3):
        """Nothing more arrives for a while (only comments, if anything); the viewer is spent after."""
        self.sock.settimeout(seconds)
        try:
            extra = next(self.frames(), None)
        except TimeoutError:
            extra = None
        assert extra is None, extra

    def close(self):
        self.response.close()
        self.connection.close()
