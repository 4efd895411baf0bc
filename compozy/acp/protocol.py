"""ACP wire format: newline-delimited JSON-RPC 2.0 over stdio.

Message classification and blocking line I/O over compozy.jsonrpc's framing. Stdlib, compozy.text
and compozy.jsonrpc only.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator

from compozy import jsonrpc
from compozy.jsonrpc import ENVELOPE

PROTOCOL_VERSION = 1
# One line holds a prompt at its 1 MiB cap (measured encoded) with any carried context, or an
# 8 MiB file read; both sides of the pipe use the same limit.
MAX_LINE_BYTES = 16 * 1024 * 1024

# JSON-RPC's own codes, which ACP's callers name through this module, then ACP's.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND = jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST, jsonrpc.METHOD_NOT_FOUND
INVALID_PARAMS, INTERNAL_ERROR = jsonrpc.INVALID_PARAMS, jsonrpc.INTERNAL_ERROR
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002

JSONRPC_VERSION = jsonrpc.VERSION
SESSION_UPDATE = "session/update"  # an agent's output notification
EXCERPT_LIMIT = 200
_READ_SIZE = 64 * 1024
_WHITESPACE = b" \t\r\n"  # what JSON may have around a value (and json.loads skips)
# json.loads without its per-call layers (a third of a short line's decoding): the text is stripped, so
# a line is one value exactly when the scan ends at its end.
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by __init__, untyped


def encode(message: dict | str) -> bytes:
    """Serialize one message as a single UTF-8 line ending in a newline (compozy.text.json_line)."""
    return jsonrpc.encode(message)


def encoded_size(text: str) -> int:
    """The bytes `text` takes as a JSON string on the wire (quotes excluded)."""
    return len(encode(text)) - 3


make_request, make_notification = jsonrpc.request, jsonrpc.notification
make_result, make_error = jsonrpc.result, jsonrpc.error


@dataclass(frozen=True)
class Request:
    id: object
    method: str
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Response:
    id: object
    result: object = None
    error: dict | None = None


NO_ID = object()  # a ProtocolIssue that is no request of the agent's: nothing to answer


@dataclass(frozen=True)
class ProtocolIssue:
    """A line that is no valid message. request_id: the id of a request it evidently was (answered
    with an error so the agent never waits for ever), else NO_ID."""

    kind: str
    excerpt: str
    request_id: object = NO_ID


Message = Request | Notification | Response


def excerpt(data: bytes | str, limit: int = EXCERPT_LIMIT) -> str:
    """A bounded, printable ASCII rendering of data, ending in "...(N bytes)" when cut."""
    if isinstance(data, str):
        raw = data.encode("utf-8", "backslashreplace")
    else:
        raw = bytes(data)
    text = _printable(raw[:limit])
    if len(raw) <= limit and len(text) <= limit:
        return text
    return f"{text[:limit]}...({len(raw)} bytes)"


def _printable(raw: bytes) -> str:
    text = raw.decode("utf-8", "backslashreplace")
    # ascii(char) spells a non-printable character as its escape, such as \x00 or \u2028.
    return "".join(char if " " <= char <= "~" else ascii(char)[1:-1] for char in text)


def parse_line(line: bytes) -> Message | ProtocolIssue | None:
    """Classify one line; None for a blank line."""
    return _classified(*_decoded(line))


def parse_output_line(line: bytes) -> Message | ProtocolIssue | dict | None:
    """parse_line for the agent's output, where a session/update notification (nearly every line of
    a turn) comes as its params dict: the same check as parse_line's, with no Notification around it."""
    payload, stripped = _decoded(line)
    if payload.__class__ is dict and payload.get("method") == SESSION_UPDATE and "id" not in payload \
            and payload.get(ENVELOPE) == JSONRPC_VERSION and "result" not in payload and "error" not in payload:
        params = payload.get("params")
        if params is None or params.__class__ is dict:
            return params or {}
    return _classified(payload, stripped)


def _decoded(line: bytes):
    """(the line's JSON value, the stripped line); (a ProtocolIssue, ...) for one that is no JSON, (None, b"")
    for a blank line."""
    stripped = line.strip(_WHITESPACE)
    if not stripped:
        return None, stripped
    try:
        text = stripped.decode("utf-8")
        payload, end = _scan(text, 0)
    except UnicodeDecodeError:
        return ProtocolIssue("invalid_utf8", excerpt(stripped)), stripped
    except (ValueError, RecursionError, StopIteration):  # StopIteration: no JSON value at all
        return ProtocolIssue("not_json", excerpt(stripped)), stripped
    if end != len(text):  # more after the value (json.loads: "Extra data")
        return ProtocolIssue("not_json", excerpt(stripped)), stripped
    return payload, stripped


def _classified(payload, stripped: bytes) -> Message | ProtocolIssue | None:
    if payload is None and not stripped:
        return None
    if isinstance(payload, ProtocolIssue):
        return payload
    if not isinstance(payload, dict):
        return ProtocolIssue("not_object", excerpt(stripped))
    message = _classify(payload)
    if message is None:
        return ProtocolIssue("invalid_message", excerpt(stripped), _request_id(payload))
    return message


def _request_id(payload: dict):
    """The id of something shaped like a request (a method and a valid id), else NO_ID."""
    if "method" in payload and "result" not in payload and "error" not in payload \
            and payload.get("id") is not None and _valid_id(payload["id"]):
        return payload["id"]
    return NO_ID


_ID_FIELD = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*[,}]')


def recover_request_id(head: bytes, tail: bytes):
    """The top-level id of a request line too long to parse, from its first and last bytes: the
    first "id" field of the head (encoders put it before params), else the last of the tail."""
    if b'"method"' not in head + tail:
        return NO_ID
    in_tail = list(_ID_FIELD.finditer(tail))
    found = _ID_FIELD.search(head) or (in_tail[-1] if in_tail else None)
    if found is None:
        return NO_ID
    try:
        return json.loads(found.group(1))
    except ValueError:
        return NO_ID


def _classify(payload: dict) -> Message | None:
    if payload.get(ENVELOPE) != JSONRPC_VERSION:
        return None
    if "method" in payload:
        return _classify_call(payload)
    return _classify_response(payload)


def _classify_call(payload: dict) -> Request | Notification | None:
    method = payload["method"]
    # An absent or null params is read as {}; any other non-object is malformed.
    params = payload.get("params")
    params = {} if params is None else params
    if not isinstance(method, str) or not isinstance(params, dict):
        return None
    if "result" in payload or "error" in payload:
        return None
    if "id" not in payload:
        return Notification(method, params)
    if not _valid_id(payload["id"]):
        return None
    return Request(payload["id"], method, params)


def _classify_response(payload: dict) -> Response | None:
    has_result, has_error = "result" in payload, "error" in payload
    if has_result == has_error or not _valid_id(payload.get("id", False)):
        return None
    error = payload.get("error")
    if has_error and not (isinstance(error, dict) and _is_int(error.get("code"))):
        return None
    return Response(payload["id"], payload.get("result"), error)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _valid_id(value) -> bool:
    return value is None or isinstance(value, str) or _is_int(value)


class LineSplitter:
    """Turns a byte stream into complete lines; never holds more than MAX_LINE_BYTES of one line."""

    KEPT = 4096  # bytes kept of each end of a discarded line, to find its request id

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES):
        self.max_line_bytes = max_line_bytes
        self._pending = bytearray()
        self._discarding = False
        self._head, self._tail, self._overflow = b"", b"", ""

    def feed(self, data: bytes) -> list[bytes | ProtocolIssue]:
        """Complete lines (without the newline) and issues, in stream order."""
        out: list[bytes | ProtocolIssue] = []
        *lines, rest = data.split(b"\n")
        for line in lines:
            if self._pending or self._discarding or len(line) > self.max_line_bytes:
                self._add(line, out, line_ends=True)
            else:  # a whole line in this piece: as _add would give it, without the copies
                out.append(line)
        if rest:
            self._add(rest, out, line_ends=False)
        return out

    def finish(self) -> list[ProtocolIssue]:
        """At EOF: report a pending partial line instead of returning it."""
        if self._discarding:
            out: list = []
            self._end_overflow(out)
            return out
        pending = bytes(self._pending)
        self._pending.clear()
        if not pending.strip(_WHITESPACE):
            return []
        return [ProtocolIssue("truncated_line", excerpt(pending))]

    def _add(self, piece: bytes, out: list, line_ends: bool) -> None:
        if self._discarding:
            self._tail = (self._tail + piece)[-self.KEPT:]
            if line_ends:
                self._end_overflow(out)
            return
        if len(self._pending) + len(piece) > self.max_line_bytes:
            self._overflow = self._overflow_excerpt(piece)
            self._head = (bytes(self._pending[:self.KEPT]) + piece[:self.KEPT])[:self.KEPT]
            self._tail = (bytes(self._pending[-self.KEPT:]) + piece)[-self.KEPT:]
            self._pending.clear()
            self._discarding = True
            if line_ends:
                self._end_overflow(out)
            return
        self._pending += piece
        if line_ends:
            out.append(bytes(self._pending))
            self._pending.clear()

    def _end_overflow(self, out: list) -> None:
        out.append(ProtocolIssue("line_too_long", self._overflow, recover_request_id(self._head, self._tail)))
        self._discarding = False
        self._head, self._tail, self._overflow = b"", b"", ""

    def _overflow_excerpt(self, piece: bytes) -> str:
        head = (bytes(self._pending[:EXCERPT_LIMIT]) + piece[:EXCERPT_LIMIT])[:EXCERPT_LIMIT]
        return f"{_printable(head)[:EXCERPT_LIMIT]}...(over {self.max_line_bytes} bytes)"


def _report_to_stderr(issue: ProtocolIssue) -> None:
    sys.stderr.write(f"acp protocol issue: {issue.kind}: {issue.excerpt}\n")
    sys.stderr.flush()


class StdioEndpoint:
    """Blocking line I/O for an agent process: reads requests from a binary input, writes messages thread-safely."""

    def __init__(self, infile, outfile, on_issue: Callable[[ProtocolIssue], None] | None = None):
        self._infile = infile
        self._outfile = outfile
        self._on_issue = on_issue or _report_to_stderr
        self._write_lock = threading.Lock()

    def messages(self) -> Iterator[Message]:
        """Incoming messages in order; protocol issues are reported and skipped; ends at EOF."""
        splitter = LineSplitter()
        # read1 returns whatever is available instead of waiting for a full buffer.
        read = getattr(self._infile, "read1", self._infile.read)
        while chunk := read(_READ_SIZE):
            for item in splitter.feed(chunk):
                message = item if isinstance(item, ProtocolIssue) else parse_line(item)
                if isinstance(message, ProtocolIssue):
                    self._on_issue(message)
                elif message is not None:
                    yield message
        for issue in splitter.finish():
            self._on_issue(issue)

    def send(self, message: dict) -> None:
        self.send_raw(encode(message))

    def send_raw(self, data: bytes) -> None:
        with self._write_lock:
            self._outfile.write(data)
            self._outfile.flush()
