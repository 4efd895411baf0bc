"""Parse at the edge, once (issue 23): every operation refuses a query parameter it does not declare, like an
unknown body field (invalid_request, details.fields), before it does anything, over HTTP, over the Unix socket
and in process; the façade receives the operation's typed request object."""

import pytest

from compozy.api import OPERATIONS, OPS
from compozy.cli.client import Client
from compozy.errors import CompozyError
from compozy.parsing import Request
from compozy.paths import ensure_auth_token
from tests.harness.served import ServedManager

SAMPLE = {"entry": "queue_01J9Z3N4B6C8D0E2F4G6H8J0KM", "agent_name": "reference", "setting": "session.title",
          "turn_id": "turn_01J9Z3N4B6C8D0E2F4G6H8J0KM", "checkpoint_id": "ckpt_01J9Z3N4B6C8D0E2F4G6H8J0KM",
          "item_id": "attn_01J9Z3N4B6C8D0E2F4G6H8J0KM"}


@pytest.fixture(scope="module")
def daemon_and_session(tmp_path_factory):
    root = tmp_path_factory.mktemp("parse-edge")
    (root / "work").mkdir()
    served = ServedManager(root / "home").start()
    try:
        created = served.manager.create_session(body={"workspace_path": str(root / "work"), "name": "kept"})
        yield served, created["session"]
    finally:
        served.close()


def path_of(operation, session):
    values = {"workspace": session["workspace_id"], "session_id": session["id"], **SAMPLE}
    path = operation.rule
    for name in operation.path_params:
        path = path.replace(f"<{name}>", values[name])
    return path


@pytest.mark.parametrize("operation", OPERATIONS, ids=[op.name for op in OPERATIONS])
def test_every_route_refuses_an_unknown_query_parameter_and_changes_nothing(daemon_and_session, operation):
    served, session = daemon_and_session
    before = served.manager.get_session(session["id"])["session"]
    for url in (served.http_url, served.socket_url):
        client = Client(url, token=ensure_auth_token(served.home))
        with pytest.raises(CompozyError) as refused:
            client.call(operation.method, path_of(operation, session), query={"colour": "red"},
                        body={} if operation.method in ("POST", "PUT", "PATCH") else None)
        assert refused.value.code == "invalid_request", (url, refused.value.message)
        assert refused.value.details.get("fields") == ["colour"], refused.value.message
    after = served.manager.get_session(session["id"])["session"]
    assert (after["name"], after["state"], after["archived"], after["fences"]) == \
        (before["name"], before["state"], before["archived"], before["fences"])


def test_in_process_calls_are_parsed_at_the_facade(daemon_and_session):
    served, session = daemon_and_session
    manager = served.manager
    for call in (lambda: manager.list_sessions(query={"colour": "red"}),
                 lambda: manager.archive_session(session["id"], None, query={"colour": "red"}),
                 lambda: manager.events(session["id"], None, query={"after": "1"})):
        with pytest.raises(CompozyError) as refused:
            call()
        assert refused.value.code == "invalid_request" and refused.value.details["fields"]
    with pytest.raises(CompozyError) as refused:
        manager.rename_session(session["id"], None, body={"name": "x", "colour": "red"})
    assert refused.value.details["fields"] == ["colour"]
    assert manager.get_session(session["id"])["session"]["name"] == "kept"


def test_a_request_object_is_typed_and_reads_as_its_given_fields():
    request = OPS["session.events"].parse({"workspace": "app", "session_id": "sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY"},
                                          query={"limit": "5", "after_sequence": "0", "archive": "all"})
    assert isinstance(request, Request) and type(request).__name__ == "SessionEventsRequest"
    assert (request.limit, request.after_sequence, request.archive, request.turn_id) == (5, 0, "all", None)
    assert dict(request) == {"limit": 5, "after_sequence": 0, "archive": "all"}
    assert request.path == {"workspace": "app", "session_id": "sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY"}
    assert OPS["session.archive"].parse(query={"stop": "true"}).stop is True
    with pytest.raises(AttributeError):
        request.limit = 6  # frozen: what was parsed is what the domain reads


@pytest.mark.parametrize("operation, body, query, why", [
    ("session.prompt", {"message": "hi", "message_id": "m1"}, None, "all or none of message_id and idempotency_key"),
    ("session.approve", {"request_id": "perm_x"}, None, "exactly one of option_id and decision"),
    ("session.list", None, {"limit": "0"}, "limit must be between 1 and 1000"),
    ("session.list", None, {"state": "sleeping"}, "state must be one of"),
    ("session.runtime.clear", None, {}, "expected_revision is required"),
    ("session.get", {"name": "x"}, None, "takes no request body"),
])
def test_parse_refuses_what_the_entry_forbids(operation, body, query, why):
    with pytest.raises(CompozyError) as refused:
        OPS[operation].parse(body=body, query=query)
    assert refused.value.code == "invalid_request" and why in refused.value.message


def test_domain_code_written_the_old_way_still_reads_a_request():
    """A branch that adds an operation the old way (its domain calls check_body on what the façade gets) keeps
    working: the request is a mapping of its fields."""
    from compozy import validate as v
    request = OPS["session.rename"].parse(body={"name": "release notes"})
    assert v.check_body(request, v.RENAME_FIELDS) == {"name": "release notes"}
