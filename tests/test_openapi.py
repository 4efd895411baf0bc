"""GET /api/openapi.json describes the daemon's routes exactly: each once, typed, with every status it answers."""

import json
import re
from collections import Counter

import pytest
from openapi_spec_validator import validate as validate_spec

from compozy import __version__
from compozy.api import OPERATIONS, OPS
from compozy.cli.client import Client
from compozy.config import load as load_config
from compozy.errors import ERRORS, CompozyError
from compozy.http.openapi import error_codes, openapi, openapi_path
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.states import Disposition, StopAnswer
from tests.harness.scenario import all_scenarios
from tests.harness.daemon import DaemonProcess

HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """One real daemon for the module (the document does not depend on state)."""
    process = DaemonProcess(tmp_path_factory.mktemp("openapi") / "home")
    try:
        yield process.start()
    finally:
        process.stop()


def documented_statuses(operation):
    """Every HTTP status an operation's OpenAPI entry documents: its answers and its errors'."""
    return {s.status for s in operation.success} | {ERRORS[code].status for code in error_codes(operation)}


def expected_operations():
    return {(op.method.lower(), re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", op.rule)) for op in OPERATIONS}


def served_document(daemon):
    status, document = daemon.client(timeout=30).call("GET", "/api/openapi.json")
    assert status == 200
    return document


def operations(document):
    return [(method, path, operation) for path, item in document["paths"].items()
            for method, operation in item.items() if method in HTTP_METHODS]


def assert_lists_exactly_the_routes(document):
    assert document["openapi"].startswith("3.")
    served = [(method, path) for method, path, _ in operations(document)]
    assert len(served) == len(set(served))
    assert set(served) == expected_operations()
    assert len(served) == len(OPERATIONS)


def assert_unique_operation_ids(document):
    ids = [operation.get("operationId") for _, _, operation in operations(document)]
    assert all(isinstance(i, str) and i for i in ids)
    assert [i for i, n in Counter(ids).items() if n > 1] == []


def test_openapi_lists_every_route_and_nothing_else(daemon):
    document = served_document(daemon)
    assert_lists_exactly_the_routes(document)
    # The document is the same over the Unix socket.
    _, over_socket = Client(daemon.socket_url, timeout=30).call("GET", "/api/openapi.json")
    assert json.dumps(over_socket, sort_keys=True) == json.dumps(document, sort_keys=True)


def test_openapi_operation_ids_unique(daemon):
    assert_unique_operation_ids(served_document(daemon))


def test_generated_document_matches_route_table():
    """The generator alone (no daemon): separates a serving fault from a content fault."""
    document = openapi(__version__)
    assert_lists_exactly_the_routes(document)
    assert_unique_operation_ids(document)
    assert document["info"]["version"] == __version__


def test_openapi_path_parameters_match_path_templates(daemon):
    for method, path, operation in operations(served_document(daemon)):
        declared = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "path"}
        assert declared == set(re.findall(r"{(\w+)}", path)), (method, path)
        assert all(p.get("required") for p in operation.get("parameters", []) if p.get("in") == "path")
        assert operation.get("responses"), (method, path)


def test_route_table_has_no_duplicates():
    keys = [(op.method, op.rule) for op in OPERATIONS]
    assert [k for k, n in Counter(keys).items() if n > 1] == []


def test_served_document_is_valid_openapi(daemon):
    validate_spec(served_document(daemon))


def test_every_error_response_is_the_error_body_and_names_its_codes():
    document = openapi(__version__)
    for method, path, operation in operations(document):
        for status, response in operation["responses"].items():
            if status == "default" or int(status) >= 400:
                assert response["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
            if status != "default" and int(status) >= 400:
                assert {ERRORS[code].status for code in response["x-error-codes"]} == {int(status)}, (path, status)


def test_guards_answers_are_listed_on_every_route():
    document = openapi(__version__)
    for method, path, operation in operations(document):
        statuses = set(operation["responses"])
        assert {"403", "413"} <= statuses, (method, path)
        assert ("401" in statuses) == (path != "/api/health"), (method, path)  # only health is open
        assert (operation.get("security") == []) == (path == "/api/health"), (method, path)
        if method in ("post", "put"):
            assert "415" in statuses, (method, path)


def test_request_bodies_are_typed_with_required_fields():
    prompt = OPS["session.prompt"]
    schema = openapi(__version__)["paths"][openapi_path(prompt.rule)]["post"]["requestBody"]
    assert schema["required"] is True
    body = schema["content"]["application/json"]["schema"]
    assert body["required"] == ["message"] and body["additionalProperties"] is False
    message = body["properties"]["message"]
    assert message["type"] == "string" and message["maxLength"] == 1024 * 1024
    assert re.search(message["pattern"], "hello\n") and not re.search(message["pattern"], " \u3000\n")
    assert body["properties"]["expected_turn_id"]["pattern"] == "^turn_[0-9A-HJKMNP-TV-Z]{26}$"
    assert body["properties"]["mode"]["enum"][:3] == ["queue", "steer", "interrupt"]
    assert body["properties"]["runtime"]["properties"]["acp_options"]["items"]["required"] == ["id"]


def test_query_parameters_are_typed_as_parsed():
    document = openapi(__version__)
    for operation in OPERATIONS:
        parameters = document["paths"][openapi_path(operation.rule)][operation.method.lower()]["parameters"]
        typed = {p["name"]: p["schema"] for p in parameters if p["in"] == "query"}
        assert set(typed) == set(operation.query), operation.name
        for name, field in operation.query.items():
            assert typed[name]["type"] == {int: "integer", bool: "boolean", str: "string"}[field.types[0]]
            assert typed[name].get("enum", []) == list(field.choices)
    limit = document["paths"]["/api/sessions"]["get"]["parameters"][6]
    assert limit["name"] == "limit" and limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000}


def test_streaming_routes_answer_event_streams():
    document = openapi(__version__)
    for operation in OPERATIONS:
        responses = document["paths"][openapi_path(operation.rule)][operation.method.lower()]["responses"]
        success = str(min(s.status for s in operation.success))
        kinds = set(responses[success].get("content", {}))
        expected = {"always": {"text/event-stream"}, "on request": {"text/event-stream", "application/json"},
                    "": {"application/json"}}[operation.stream]
        files = {media for s in operation.success for media in s.media}
        expected = files or expected  # an answer that is a file (an export) has its media types instead
        assert kinds == expected, operation.name


@pytest.mark.parametrize("kinds, operation", [(Disposition, "session.prompt"), (StopAnswer, "session.stop")])
def test_every_answer_kind_has_a_status(kinds, operation):
    for kind in kinds:
        assert OPS[operation].status_for(kind) in documented_statuses(OPS[operation])


def _scenario_expectations():
    for scenario in all_scenarios():
        for step in (scenario.data.get("steps") or []) + (scenario.data.get("finally") or []):
            if "do" in step and step["do"] in OPS:
                yield scenario.id, step["do"], step.get("expect") or {}


def test_scenario_statuses_and_errors_are_documented():
    """What the scenarios expect an operation to answer is in its OpenAPI entry (the harness also
    checks every answer it observes against the document while the scenarios run)."""
    checked = 0
    for scenario_id, name, expect in _scenario_expectations():
        operation = OPS[name]
        if "error" in expect:
            assert expect["error"] in error_codes(operation), (scenario_id, name, expect["error"])
        if "http_status" in expect:
            assert expect["http_status"] in documented_statuses(operation), (scenario_id, name)
        checked += 1
    assert checked > 100


# -- the body spec a route documents is the spec it is enforced with ------------------------------

SAMPLES = {str: "x", bool: True, int: 1, dict: {}, list: []}
WRONG = {str: 5, bool: "yes", int: "1", dict: [], list: {}}


@pytest.fixture(scope="module")
def facade(tmp_path_factory):
    """A real manager with one unbound session: each body is checked before anything starts."""
    root = tmp_path_factory.mktemp("bodies")
    home, workspace = Home(root / "home"), root / "workspace"
    workspace.mkdir()
    manager = SessionManager(home, load_config(home.config_file)).start()
    session = manager.create_session({"workspace_path": str(workspace)})["session"]
    try:
        yield manager, {"workspace": session["workspace_id"], "session_id": session["id"],
                        "entry": "queue_01J00000000000000000000000", "checkpoint_id": "ckpt_01J00000000000000000000000", "item_id": "attn_01J00000000000000000000000",
                        "setting": "session.supervision.idle_release_after"}
    finally:
        manager.shutdown()


def _refusal(manager, operation, params, body):
    arguments = {name: params[name] for name in operation.path_params}
    with pytest.raises(CompozyError) as caught:
        getattr(manager, operation.facade)(body=body, **arguments)
    return caught.value


PATTERNED = ("x", "/tmp", "turn_01J00000000000000000000000", "sess_01J00000000000000000000000")


def _sample(field):
    if field.choices:
        return field.choices[0]
    if field.pattern:
        return next(sample for sample in PATTERNED if re.search(field.pattern, sample))
    return SAMPLES[field.types[0]]


def _breaking(pattern):
    """A string the documented pattern refuses (each pattern refuses one of these)."""
    return next(sample for sample in ("", " ", "a\x00b") if not re.search(pattern, sample))


# The façade enforces these; daemon.login's own view does (tests/test_auth.py).
BODY_OPERATIONS = [op for op in OPERATIONS if op.body is not None and op.facade]


@pytest.mark.parametrize("operation", BODY_OPERATIONS, ids=[op.name for op in BODY_OPERATIONS])
def test_enforced_body_spec_is_the_documented_one(facade, operation):
    manager, params = facade
    spec = openapi(__version__)["paths"][openapi_path(operation.rule)][operation.method.lower()]["requestBody"]
    documented = spec["content"]["application/json"]["schema"]
    required = set(documented.get("required", []))
    valid = {name: _sample(field) for name, field in operation.body.items() if name in required}
    error = _refusal(manager, operation, params, {**valid, "not_a_field": 1})
    assert error.code == "invalid_request" and error.details.get("fields") == ["not_a_field"]
    for name in required:
        error = _refusal(manager, operation, params, {k: v for k, v in valid.items() if k != name})
        assert (error.code, error.details.get("field")) == ("invalid_request", name), name
    for name, schema in documented["properties"].items():
        field = operation.body[name] if name in operation.body else operation.spellings[name].spec  # operation.Spelling
        error = _refusal(manager, operation, params, {**valid, name: WRONG[field.types[0]]})
        assert (error.code, error.details.get("field")) == ("invalid_request", name), name
        assert schema["type"] == {str: "string", bool: "boolean", int: "integer", dict: "object",
                                  list: "array"}[field.types[0]]
        if "pattern" in schema:  # the documented pattern is the enforced one
            error = _refusal(manager, operation, params, {**valid, name: _breaking(schema["pattern"])})
            assert (error.code, error.details.get("field")) == ("invalid_request", name), name


RULED = [op for op in OPERATIONS if op.rules]


def _violations(rule, valid):
    """Bodies that break a documented rule across fields (validate.Rule)."""
    given = {name: RULE_SAMPLES.get(name, "x") for name in rule.names}
    without = {k: v for k, v in valid.items() if k not in rule.names}
    if rule.kind == "one_of":
        return [without, {**without, **given}]
    if rule.kind == "together":
        return [{**without, name: given[name]} for name in rule.names]
    return [{**without, **given}]


RULE_SAMPLES = {"workspace_path": "/tmp", "expected_epoch": 0, "expected_generation": 0, "expected_max_sequence": 0,
                "route": 1, "runtime": {"model": "m"}, "message_id": "m1", "idempotency_key": "k1",
                "decision": "allow-once", "option_id": "allow"}


@pytest.mark.parametrize("operation", RULED, ids=[op.name for op in RULED])
def test_documented_rules_across_fields_are_enforced(facade, operation):
    manager, params = facade
    spec = openapi(__version__)["paths"][openapi_path(operation.rule)][operation.method.lower()]["requestBody"]
    documented = spec["content"]["application/json"]["schema"]
    assert documented["allOf"] == [rule.schema() for rule in operation.rules]
    valid = {name: _sample(field) for name, field in operation.body.items() if field.required}
    for rule in operation.rules:
        for body in _violations(rule, valid):
            assert _refusal(manager, operation, params, body).code == "invalid_request", (rule, body)
