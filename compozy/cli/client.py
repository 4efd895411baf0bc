"""The CLI's HTTP client of the daemon over TCP or the Unix socket; error bodies become CompozyError again.

Layer 6 (surface). The CLI talks to the daemon only through this module, with requests built from
the operation table (stdlib and the table only: a fast import).
"""

import http.client
import json
import os
import socket
from urllib.parse import quote, urlencode, urlsplit

from compozy.operation import PARAMETER
from compozy.errors import ERRORS, CompozyError


def _unix_connection(path, timeout):
    from compozy.paths import UnixConnection
    return UnixConnection(path, timeout)


def resolve_url(url=None, home=None):
    """--url, else $COMPOZY_URL, else the home folder's socket."""
    url = url or os.environ.get("COMPOZY_URL")
    if url:
        return url
    return "unix://" + str(home.socket_file)


def tcp_secret(home=None):
    """What the CLI sends over TCP: $COMPOZY_TOKEN when set, else the home's auth_token (None before the
    daemon's first start)."""
    from compozy.paths import Home, UnsafeHome, read_auth_token
    if os.environ.get("COMPOZY_TOKEN"):
        return os.environ["COMPOZY_TOKEN"]
    try:
        return read_auth_token(home or Home())
    except FileNotFoundError:
        return None
    except UnsafeHome as exc:
        raise CompozyError("unauthorized", str(exc)) from None


class Client:
    def __init__(self, url, timeout=60.0, token=None):
        """token: the daemon's secret for TCP (default: tcp_secret()); never sent to a socket."""
        self.url, self.timeout, self.token = url, timeout, token
        parts = urlsplit(url)
        self.over_tcp = parts.scheme == "http"
        if parts.scheme == "unix":
            self._connect = lambda timeout: _unix_connection(parts.path, timeout)
        elif parts.scheme == "http":
            self._connect = lambda timeout: http.client.HTTPConnection(parts.hostname, parts.port or 80,
                                                                       timeout=timeout)
        else:
            raise CompozyError("invalid_request", f"--url must be http://HOST:PORT or unix:///path, got {url!r}")

    def call(self, method, path, body=None, query=None, headers=None):
        """(status, document); an error status raises CompozyError with the daemon's code."""
        response, connection = self._send(method, path, body, query, headers, self.timeout)
        try:
            data = response.read()
        finally:
            connection.close()
        document = _decode(data) if data else {}
        if response.status >= 400:
            raise _error_from(response.status, document)
        return response.status, document

    def fetch(self, method, path, query=None):
        """(media type, body bytes) of an answer that is a file rather than a JSON document (an export);
        an error status raises CompozyError with the daemon's code."""
        response, connection = self._send(method, path, None, query, None, self.timeout)
        try:
            data = response.read()
        finally:
            connection.close()
        if response.status >= 400:
            raise _error_from(response.status, _decode(data) if data else {})
        return response.getheader("Content-Type") or "", data

    def exchange(self, method, path, body, headers=None):
        """(status, body bytes) whatever the status: for a protocol with error bodies of its own (MCP)."""
        response, connection = self._send(method, path, body, None, headers, self.timeout)
        try:
            return response.status, response.read()
        finally:
            connection.close()

    def stream(self, method, path, body=None, query=None, timeout=None, headers=None):
        """Yield (event, data) pairs of a Server-Sent Events response."""
        headers = {**(headers or {}), "Accept": "text/event-stream"}
        response, connection = self._send(method, path, body, query, headers, timeout)
        try:
            if response.status >= 400:
                raise _error_from(response.status, _decode(response.read()))
            if "text/event-stream" not in (response.getheader("Content-Type") or ""):
                yield "document", _decode(response.read())
                return
            yield from _parse_sse(response)
        finally:
            connection.close()

    def _send(self, method, path, body, query, headers, timeout):
        target = path + ("?" + urlencode(query) if query else "")
        payload = json.dumps(body).encode() if body is not None else None
        headers = dict(headers or {})
        if self.over_tcp:  # the socket needs none: never hand the secret to a socket
            self.token = self.token or tcp_secret()
            if self.token and "Authorization" not in headers:
                headers["Authorization"] = "Bearer " + self.token
        if payload is not None:
            headers["Content-Type"] = "application/json"
        connection = self._connect(timeout)
        try:
            connection.request(method, target, body=payload, headers=headers)
            return connection.getresponse(), connection
        except (ConnectionRefusedError, FileNotFoundError, socket.timeout, OSError) as exc:
            connection.close()
            raise CompozyError("daemon_unavailable", f"no compozy daemon answers at {self.url} ({exc}); "
                               f"start one with `compozy daemon start`") from None


def request(operation, fields):
    """(method, path, query, body) of an operation from the table: path parameters by name, every
    other field in the body when the operation reads one, else in the query. None means absent."""
    fields = {name: value for name, value in fields.items() if value is not None}
    path = PARAMETER.sub(lambda m: quote(str(fields.pop(m.group(1))), safe=""), operation.rule)
    if operation.body is not None:
        return operation.method, path, None, fields
    if fields and not operation.query:
        raise TypeError(f"{operation.name} takes no {', '.join(sorted(fields))}")
    return operation.method, path, encode_query(fields) or None, None


def encode_query(fields):
    """Query values as the daemon parses them: booleans as true/false, numbers as digits."""
    return {name: ("true" if value else "false") if isinstance(value, bool) else str(value)
            for name, value in fields.items()}


def _decode(data):
    """A JSON body (bytes, or the text of an SSE frame's data), else {"error": its text}."""
    try:
        return json.loads(data)
    except ValueError:
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        return {"error": text[:500]}


def _error_from(status, document):
    code = document.get("code") if isinstance(document, dict) else None
    if code not in ERRORS:
        code = "internal_error" if status >= 500 else "invalid_request"
    error = CompozyError(code, document.get("error") or f"HTTP {status}", **(document.get("details") or {}))
    error.body, error.http_status = document, status
    return error


def _parse_sse(response):
    event, data = "message", []
    for raw in _lines(response):
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if not line:
            if data:
                yield event, _decode("\n".join(data))
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def _lines(response):
    """The response's lines (without their newline) as they arrive: whatever the socket holds is read
    at once and split here (reading it line by line through http.client cost more than the decoding)."""
    tail = b""
    while chunk := response.read1(65536):
        lines = (tail + chunk).split(b"\n")
        tail = lines.pop()
        yield from lines
    if tail:
        yield tail
