"""Browser safety and request hygiene against a real daemon: Host and Origin checks, body limits,
content types, malformed bodies, unknown routes and methods, the error shape, and path-safe IDs.

http.client is used directly so each test controls every header.
"""

import http.client
import json
import os

import pytest

from compozy.paths import UnixConnection
from compozy.errors import ERRORS, TOP_LEVEL_FIELDS
from tests.harness.daemon import DaemonProcess

MAX_BODY = 8 * 1024 * 1024
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("guards")
    workspace = base / "workspace"
    workspace.mkdir()
    daemon = DaemonProcess(base / "home")
    try:
        daemon.start()
        daemon.port = int(daemon.http_url.rsplit(":", 1)[1])
        daemon.workspace = workspace.resolve()
        yield daemon
    finally:
        daemon.stop()


class Answer:
    def __init__(self, status, headers, data):
        self.status, self.headers, self.data = status, headers, data

    @property
    def json(self):
        return json.loads(self.data)


def send(daemon, method, path, body=None, headers=None, unix=False, chunked=False):
    """Over TCP with the daemon's secret (unless headers name an Authorization); over the socket without."""
    connection = (UnixConnection(daemon.info["socket"], 30) if unix
                  else http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30))
    headers = dict(headers or {}) if unix else {**daemon.auth_headers, **(headers or {})}
    try:
        connection.request(method, path, body=body, headers=headers, encode_chunked=chunked)
        response = connection.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def assert_error(answer, status, code):
    """The one error shape: exactly error, code, details (plus seed-named fields), a registered code."""
    assert answer.status == status, answer.data
    assert answer.headers.get("content-type", "").startswith("application/json")
    body = answer.json
    assert {"error", "code", "details"} <= set(body), body
    assert set(body) - {"error", "code", "details"} <= set(TOP_LEVEL_FIELDS), body
    assert body["code"] == code, body
    assert body["code"] in ERRORS and ERRORS[body["code"]].status == answer.status
    assert isinstance(body["error"], str) and body["error"]
    assert isinstance(body["details"], dict)
    return body


def assert_still_healthy(daemon):
    answer = send(daemon, "GET", "/api/health")
    assert answer.status == 200 and answer.json["status"] == "ok"


# -- Host ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost.evil.example",
                                  "127.0.0.2:{port}", ""])
def test_foreign_host_refused(served, host):
    answer = send(served, "GET", "/api/health", headers={"Host": host.format(port=served.port)})
    assert_error(answer, 403, "host_not_allowed")
    assert_still_healthy(served)


def test_foreign_host_refused_on_unix_socket(served):
    answer = send(served, "GET", "/api/health", headers={"Host": "evil.example"}, unix=True)
    assert_error(answer, 403, "host_not_allowed")
    assert send(served, "GET", "/api/health", unix=True).status == 200


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "127.0.0.1"])
def test_loopback_host_allowed(served, host):
    answer = send(served, "GET", "/api/health", headers={"Host": host.format(port=served.port)})
    assert answer.status == 200


def test_foreign_host_refused_before_any_write(served):
    answer = send(served, "POST", "/api/workspaces", json.dumps({"name": "rebound", "path": str(served.workspace)}),
                  headers={**JSON, "Host": "evil.example"})
    assert_error(answer, 403, "host_not_allowed")
    names = [w["name"] for w in send(served, "GET", "/api/workspaces").json["workspaces"]]
    assert "rebound" not in names


# -- Origin -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["http://evil.example", "https://127.0.0.1:{port}", "http://127.0.0.1:1",
                                    "http://evil.example:{port}", "null"])
def test_cross_origin_refused(served, origin):
    answer = send(served, "GET", "/api/health", headers={"Origin": origin.format(port=served.port)})
    assert_error(answer, 403, "origin_not_allowed")
    assert_still_healthy(served)


def test_cross_origin_post_refused_before_any_write(served):
    answer = send(served, "POST", "/api/sessions", json.dumps({"workspace_path": str(served.workspace)}),
                  headers={**JSON, "Origin": "http://evil.example"})
    assert_error(answer, 403, "origin_not_allowed")
    assert_still_healthy(served)


@pytest.mark.parametrize("origin", ["http://127.0.0.1:{port}", "http://localhost:{port}"])
def test_same_origin_allowed(served, origin):
    answer = send(served, "GET", "/api/health", headers={"Origin": origin.format(port=served.port)})
    assert answer.status == 200
    assert answer.json["status"] == "ok"


# -- bodies -------------------------------------------------------------------------------------------


def padded_object(size):
    """A JSON object of exactly size bytes (an unknown field, so a valid parse is a 400, never a 413)."""
    head = b'{"bogus": 1}'
    return head + b" " * (size - len(head))


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_body_over_limit_is_413(served, chunked):
    body = padded_object(MAX_BODY + 1)
    step = 1 << 20
    payload = (body[i:i + step] for i in range(0, len(body), step)) if chunked else body
    answer = send(served, "POST", "/api/sessions", payload, headers=JSON, chunked=chunked)
    assert_error(answer, 413, "body_too_large")
    assert_still_healthy(served)


def test_body_at_limit_is_parsed(served):
    answer = send(served, "POST", "/api/sessions", padded_object(MAX_BODY), headers=JSON)
    assert_error(answer, 400, "invalid_request")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_non_json_content_type_is_415(served, content_type):
    body = json.dumps({"workspace_path": str(served.workspace)})
    answer = send(served, "POST", "/api/sessions", body, headers={"Content-Type": content_type})
    assert_error(answer, 415, "unsupported_media_type")
    assert_still_healthy(served)


def test_json_content_type_with_charset_accepted(served):
    answer = send(served, "POST", "/api/workspaces",
                  json.dumps({"name": "charset", "path": str(served.workspace / "charset")}),
                  headers={"Content-Type": "application/json; charset=utf-8"})
    assert answer.status != 415, answer.data


@pytest.mark.parametrize("body", [b'{"workspace_path":', b"{'a': 1}", b"\xff\xfe", b"{} {}", b"nul"],
                         ids=["truncated", "single-quotes", "not-utf8", "two-documents", "bare-word"])
def test_malformed_json_is_400(served, body):
    answer = send(served, "POST", "/api/sessions", body, headers=JSON)
    assert_error(answer, 400, "invalid_request")
    assert_still_healthy(served)


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 5_000 + b"1" + b"}" * 5_000],
                         ids=["100k-open-brackets", "object-5000-deep"])
def test_deeply_nested_json_is_400(served, body):
    answer = send(served, "POST", "/api/sessions", body, headers=JSON)
    assert_error(answer, 400, "invalid_request")
    assert_still_healthy(served)


def test_post_with_a_body_and_no_content_type_is_415(served):
    body = json.dumps({"workspace_path": str(served.workspace)}).encode()
    answer = send(served, "POST", "/api/sessions", body, headers={"Content-Length": str(len(body))})
    assert_error(answer, 415, "unsupported_media_type")


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_requests_from_other_sites_are_refused_even_without_origin(served, site):
    answer = send(served, "GET", "/api/sessions/stream", headers={"Sec-Fetch-Site": site})
    assert_error(answer, 403, "origin_not_allowed")
    assert send(served, "GET", "/api/health", headers={"Sec-Fetch-Site": "same-origin"}).status == 200


@pytest.mark.parametrize("query", ["after_sequence=" + "9" * 30, "before_sequence=" + "9" * 30,
                                   "limit=" + "9" * 30])
def test_huge_numbers_in_queries_are_400(served, query):
    session = json.loads(send(served, "POST", "/api/sessions", json.dumps({"workspace_path": str(served.workspace)}),
                              headers=JSON).data)["session"]
    path = f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}/events?{query}"
    assert_error(send(served, "GET", path), 400, "invalid_request")


@pytest.mark.parametrize("body", [b"[]", b'[{"workspace_path": "/tmp"}]', b'"text"', b"42", b"null"])
def test_non_object_json_is_400(served, body):
    answer = send(served, "POST", "/api/sessions", body, headers=JSON)
    assert_error(answer, 400, "invalid_request")
    assert_still_healthy(served)


# -- routes and methods -------------------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [("GET", "/api/nope"), ("GET", "/nope"), ("GET", "/assets/nope.js"),
                                          ("GET", "/api"), ("POST", "/api/nope"),
                                          ("GET", "/api/workspaces/w/sessions")])
def test_unknown_route_is_404(served, method, path):
    headers = JSON if method == "POST" else {}
    answer = send(served, method, path, b"{}" if method == "POST" else None, headers=headers)
    assert_error(answer, 404, "endpoint_not_found")
    assert_still_healthy(served)


@pytest.mark.parametrize("method, path, allowed", [("PUT", "/api/health", "GET"), ("POST", "/api/health", "GET"),
                                                   ("DELETE", "/api/sessions", "GET, POST"),
                                                   ("PATCH", "/api/workspaces", "GET, POST"),
                                                   ("POST", "/api/openapi.json", "GET"), ("TRACE", "/api/health", "GET")])
def test_wrong_method_is_405_and_names_the_allowed_ones(served, method, path, allowed):
    answer = send(served, method, path)
    assert_error(answer, 405, "method_not_allowed")
    assert set(answer.headers["allow"].split(", ")) - {"HEAD", "OPTIONS"} == set(allowed.split(", ")), answer.headers
    assert_still_healthy(served)


def test_known_error_codes_keep_the_shape(served):
    answer = send(served, "GET", "/api/sessions/sess_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert_error(answer, 404, "session_not_found")
    answer = send(served, "GET", "/api/sessions?bogus=1")
    assert_error(answer, 400, "invalid_request")


# -- IDs never touch the file system ------------------------------------------------------------------


def tree(root):
    paths = set()
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            paths.add(os.path.relpath(os.path.join(directory, name), root))
    return paths


def new_files(now, before):
    """The paths that were not there before, but for SQLite's -wal/-shm beside a database that was: the daemon's
    background work (the indexer, the ledger) may open an earlier test's store again meanwhile."""
    return {path for path in now - before if not (path.endswith(("-wal", "-shm")) and path[:-4] in before)}


TRAVERSALS = ["..%2F..%2Fescape", "..%2F..", "sess_..%2F..%2Fescape", "..", "%2E%2E%2Fescape",
              "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV%2F..%2F..%2Fescape", "..%5C..%5Cescape"]


def test_traversal_ids_never_create_files(served, tmp_path):
    created = send(served, "POST", "/api/sessions", json.dumps({"workspace_path": str(served.workspace)}),
                   headers=JSON).json["session"]
    sid, ws = created["id"], created["workspace_id"]
    for warm in ("events", "prompt/queue", "inspect"):  # opens the real session's own stores first
        assert send(served, "GET", f"/api/workspaces/{ws}/sessions/{sid}/{warm}").status == 200
    outside = served.home.parent
    before_home, before_outside = tree(served.home), tree(outside)

    requests = []
    for bad in TRAVERSALS:
        requests += [
            ("GET", f"/api/sessions/{bad}", None),
            ("DELETE", f"/api/sessions/{bad}", None),
            ("GET", f"/api/workspaces/{ws}/sessions/{bad}", None),
            ("GET", f"/api/workspaces/{ws}/sessions/{bad}/events", None),
            ("GET", f"/api/workspaces/{ws}/sessions/{bad}/stream", None),
            ("POST", f"/api/workspaces/{ws}/sessions/{bad}/prompt", {"message": "hi"}),
            ("POST", f"/api/workspaces/{ws}/sessions/{bad}/stop", {"wait": True}),
            ("POST", f"/api/workspaces/{ws}/sessions/{bad}/repair", {"dry_run": False, "force": True}),
            ("GET", f"/api/workspaces/{bad}/sessions/{sid}", None),
            ("PUT", f"/api/workspaces/{ws}/sessions/{sid}/prompt/queue/{bad}", {"message": "x"}),
            ("DELETE", f"/api/workspaces/{ws}/sessions/{sid}/prompt/queue/{bad}", None),
        ]
    raw = "../../escape"
    requests += [
        ("GET", f"/api/sessions/{raw}", None),
        ("GET", f"/api/workspaces/{ws}/sessions/{raw}/events", None),
        ("POST", "/api/sessions", {"workspace_path": str(served.workspace), "parent_session_id": raw}),
        ("POST", "/api/sessions", {"workspace": raw}),
        ("POST", f"/api/workspaces/{ws}/sessions/{sid}/prompt", {"message": "hi", "message_id": raw}),
        ("POST", f"/api/workspaces/{ws}/sessions/{sid}/prompt", {"message": "hi", "idempotency_key": raw}),
        ("POST", f"/api/workspaces/{ws}/sessions/{sid}/approve", {"request_id": raw, "decision": "allow-once"}),
        ("GET", f"/api/workspaces/{ws}/sessions/{sid}/events?turn_id={raw}", None),
        ("GET", f"/api/sessions?cursor={raw}", None),
        ("GET", f"/api/sessions?parent={raw}", None),
    ]
    for method, path, body in requests:
        payload = json.dumps(body) if body is not None else None
        answer = send(served, method, path, payload, headers=JSON if payload else {})
        assert 400 <= answer.status < 500, (method, path, answer.status, answer.data)
        body = answer.json
        assert body["code"] in ERRORS and ERRORS[body["code"]].status == answer.status, (method, path, body)
        assert set(body) - set(TOP_LEVEL_FIELDS) == {"error", "code", "details"}, (method, path, body)

    assert_still_healthy(served)
    assert new_files(tree(served.home), before_home) == set()
    assert new_files(tree(outside), before_outside) == set()
    assert not os.path.lexists(served.home.parent.parent / "escape")
    assert not os.path.lexists(served.home / "escape")


@pytest.mark.parametrize("method, path, code", [
    ("GET", "/api/sessions/..%2Fx", "session_not_found"),
    ("GET", "/api/workspaces/{ws}/sessions/..%2Fx/status", "session_not_found"),
    ("GET", "/api/workspaces/{ws}/sessions/..%2f..%2Fescape/events?limit=1", "session_not_found"),
    ("GET", "/api/workspaces/a%2Fb/sessions/{sid}/status", "workspace_not_found"),
    ("DELETE", "/api/workspaces/{ws}/sessions/{sid}/prompt/queue/..%2Fx", "queue_entry_not_found"),
])
def test_an_id_with_an_encoded_slash_gets_its_operations_answer(served, method, path, code):
    """`compozy session status ../x` sends ..%2Fx: one path segment, answered like any other bad ID
    (the server once decoded the slash before routing, and no route matched: endpoint_not_found)."""
    created = send(served, "POST", "/api/sessions", json.dumps({"workspace_path": str(served.workspace)}),
                   headers=JSON).json["session"]
    answer = send(served, method, path.format(ws=created["workspace_id"], sid=created["id"]))
    assert_error(answer, 404, code)
    assert "/" in answer.json["error"], answer.json  # the ID as the client meant it, slash decoded
