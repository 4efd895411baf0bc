"""GET /api/openapi.json describes exactly the daemon's routes, each with a unique operationId."""

import json
import re
from collections import Counter

import pytest

from compozy import __version__
from compozy.api import OPERATIONS
from compozy.client import Client
from compozy.http.openapi import openapi
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


def expected_operations():
    return {(op.method.lower(), re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", op.rule)) for op in OPERATIONS}


def served_document(daemon):
    status, document = Client(daemon.http_url, timeout=30).call("GET", "/api/openapi.json")
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
