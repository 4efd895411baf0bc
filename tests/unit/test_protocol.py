"""Unit tests for compozy.acp.protocol: framing, classification and stdio endpoint."""

import io
import json

import pytest

from compozy.acp import protocol
from compozy.acp.protocol import LineSplitter, Notification, ProtocolIssue, Request, Response, parse_line


def issue_kind(line: bytes) -> str:
    parsed = parse_line(line)
    assert isinstance(parsed, ProtocolIssue), parsed
    return parsed.kind


@pytest.mark.parametrize("line, kind", [
    (b"this is not json", "not_json"),
    (b"{\"jsonrpc\":\"2.0\",", "not_json"),
    (b"\xff\xfe garbage", "invalid_utf8"),
    (b"[1,2,3]", "not_object"),
    (b"42", "not_object"),
    (b"\"text\"", "not_object"),
    (b"null", "not_object"),
    (b'{"id":1,"method":"initialize","params":{}}', "invalid_message"),
    (b'{"jsonrpc":"1.0","id":1,"result":{}}', "invalid_message"),
    (b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}', "invalid_message"),
    (b'{"jsonrpc":"2.0","id":1}', "invalid_message"),
    (b'{"jsonrpc":"2.0","foo":"bar"}', "invalid_message"),
    (b'{"jsonrpc":"2.0","method":"x","params":[1]}', "invalid_message"),
    (b'{"jsonrpc":"2.0","method":42}', "invalid_message"),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"x"}', "invalid_message"),
    (b'{"jsonrpc":"2.0","id":true,"result":{}}', "invalid_message"),
    (b'{"jsonrpc":"2.0","id":1,"error":"boom"}', "invalid_message"),
    (b'{"jsonrpc":"2.0","result":{}}', "invalid_message"),
])
def test_garbage_lines_are_classified(line, kind):
    assert issue_kind(line) == kind


def test_deeply_nested_json_is_not_json_rather_than_a_crash():
    assert issue_kind(b"[" * 100000 + b"]" * 100000) == "not_json"


def test_request_notification_and_response_are_told_apart_by_shape():
    request = parse_line(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}')
    notification = parse_line(b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}')
    response = parse_line(b'{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}')
    error = parse_line(b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}')
    assert request == Request(0, "initialize", {"protocolVersion": 1})
    assert notification == Notification("session/cancel", {"sessionId": "s"})
    assert response == Response(0, {"outcome": {"outcome": "cancelled"}}, None)
    assert error == Response(3, None, {"code": -32601, "message": "Method not found"})


def test_missing_or_null_params_default_to_an_empty_dict():
    assert parse_line(b'{"jsonrpc":"2.0","id":1,"method":"session/list"}') == Request(1, "session/list", {})
    assert parse_line(b'{"jsonrpc":"2.0","method":"ping","params":null}') == Notification("ping", {})


def test_a_null_result_is_a_valid_response():
    assert parse_line(b'{"jsonrpc":"2.0","id":4,"result":null}') == Response(4, None, None)


@pytest.mark.parametrize("raw_id, expected", [(b"7", 7), (b'"abc"', "abc"), (b"null", None)])
def test_ids_may_be_int_string_or_null(raw_id, expected):
    request = parse_line(b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"m","params":{}}')
    response = parse_line(b'{"jsonrpc":"2.0","id":' + raw_id + b',"result":{}}')
    assert request == Request(expected, "m", {})
    assert response == Response(expected, {}, None)


@pytest.mark.parametrize("line", [b"", b"\n", b"\r\n", b"   \t  "])
def test_blank_lines_are_none(line):
    assert parse_line(line) is None


def test_crlf_line_endings_are_accepted():
    assert parse_line(b'{"jsonrpc":"2.0","method":"m","params":{}}\r\n') == Notification("m", {})
    assert LineSplitter().feed(b'{"a":1}\r\n{"b":2}\r\n') == [b'{"a":1}\r', b'{"b":2}\r']


def test_encode_is_one_compact_utf8_line_that_round_trips():
    message = protocol.make_request(3, "session/prompt", {"text": "caf\u00e9\nline two \U0001f600\u2028"})
    data = protocol.encode(message)
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert "caf\u00e9".encode() in data  # sent as itself: 2 bytes, not the 6 of \u00e9
    assert b'"id":3,' in data and b", " not in data
    assert parse_line(data) == Request(3, "session/prompt", {"text": "caf\u00e9\nline two \U0001f600\u2028"})


def test_message_builders():
    assert protocol.make_notification("m", {}) == {"jsonrpc": "2.0", "method": "m", "params": {}}
    assert protocol.make_result(1, None) == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert protocol.make_error(1, -32601, "Method not found") == {
        "jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}
    assert protocol.make_error(1, -32601, "x", {"method": "m"})["error"]["data"] == {"method": "m"}


def test_excerpt_is_bounded_and_printable():
    assert protocol.excerpt(b"short") == "short"
    long_text = protocol.excerpt(b"x" * 5000, limit=50)
    assert long_text == "x" * 50 + "...(5000 bytes)"
    cut = protocol.excerpt(b"\x00\x01\xff" * 1000, limit=40)
    assert len(cut) <= 40 + len("...(3000 bytes)") and cut.endswith("...(3000 bytes)")
    assert cut.isascii() and cut.isprintable()
    assert protocol.excerpt("caf\u00e9\n") == "caf\\xe9\\n"


def test_splitter_reassembles_a_line_fed_byte_by_byte():
    splitter = LineSplitter()
    line = protocol.encode(protocol.make_notification("session/update", {"n": 1}))
    out = []
    for index in range(len(line)):
        out += splitter.feed(line[index:index + 1])
    assert out == [line[:-1]]
    assert splitter.finish() == []


def test_splitter_returns_several_lines_from_one_feed():
    assert LineSplitter().feed(b"a\nb\n\nc") == [b"a", b"b", b""]


def test_a_line_over_the_limit_is_skipped_once_between_good_lines():
    good = protocol.encode(protocol.make_notification("ok", {}))
    huge = b'{"pad":"' + b"x" * (protocol.MAX_LINE_BYTES + 1024) + b'"}\n'
    stream = good + huge + good
    splitter = LineSplitter()
    out = []
    for start in range(0, len(stream), 64 * 1024):
        out += splitter.feed(stream[start:start + 64 * 1024])
    out += splitter.finish()
    issues = [item for item in out if isinstance(item, ProtocolIssue)]
    lines = [item for item in out if not isinstance(item, ProtocolIssue)]
    assert lines == [good[:-1], good[:-1]]
    assert [issue.kind for issue in issues] == ["line_too_long"]
    assert issues[0].excerpt.startswith('{"pad":"xxx') and len(issues[0].excerpt) < 300
    assert out.index(issues[0]) == 1


def test_line_exactly_at_the_limit_is_kept_and_one_over_is_not():
    splitter = LineSplitter(max_line_bytes=10)
    assert splitter.feed(b"0123456789\n") == [b"0123456789"]
    out = splitter.feed(b"0123456789A\nok\n")
    assert [getattr(item, "kind", item) for item in out] == ["line_too_long", b"ok"]


def test_splitter_never_holds_more_than_the_limit():
    splitter = LineSplitter(max_line_bytes=100)
    for _ in range(50):
        splitter.feed(b"y" * 64)
    assert len(splitter._pending) <= 100 and len(splitter._head) + len(splitter._tail) <= 2 * LineSplitter.KEPT
    assert [getattr(item, "kind", item) for item in splitter.feed(b"\nnext\n")] == ["line_too_long", b"next"]


def test_truncated_last_line_is_reported_at_finish():
    splitter = LineSplitter()
    assert splitter.feed(b'{"jsonrpc":"2.0","method":"m"}\n{"jsonrpc":"2.0","me') == [b'{"jsonrpc":"2.0","method":"m"}']
    issues = splitter.finish()
    assert [issue.kind for issue in issues] == ["truncated_line"]
    assert issues[0].excerpt == '{"jsonrpc":"2.0","me'
    assert splitter.finish() == []


def test_endpoint_yields_messages_and_reports_issues():
    stream = b"\n".join([
        b"garbage",
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        b"[1]",
        b'{"jsonrpc":"2.0","id":0,"result":{}}\r',
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}',
        b'{"partial',
    ])
    issues = []
    endpoint = protocol.StdioEndpoint(io.BytesIO(stream), io.BytesIO(), on_issue=issues.append)
    messages = list(endpoint.messages())
    cancel = Notification("session/cancel", {"sessionId": "s"})
    assert messages == [Request(1, "initialize", {}), Response(0, {}, None), cancel]
    assert [issue.kind for issue in issues] == ["not_json", "not_object", "truncated_line"]


def test_endpoint_send_writes_one_line_per_message():
    output = io.BytesIO()
    endpoint = protocol.StdioEndpoint(io.BytesIO(), output)
    endpoint.send(protocol.make_result(1, {"ok": True}))
    endpoint.send_raw(b"raw\n")
    lines = output.getvalue().split(b"\n")
    assert json.loads(lines[0]) == {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
    assert lines[1:] == [b"raw", b""]


def test_endpoint_reports_issues_to_stderr_by_default(capsys):
    endpoint = protocol.StdioEndpoint(io.BytesIO(b"nope\n"), io.BytesIO())
    assert list(endpoint.messages()) == []
    assert "not_json" in capsys.readouterr().err
