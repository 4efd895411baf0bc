"""Parse at the edge, once (issue 23), at the native tool server: a tool call's arguments become the operation's
typed request there, through the same `Operation.parse` as over HTTP, and the façade takes that request without
parsing it again. An argument the tool does not declare (an operation field it keeps for itself included) is
refused as HTTP refuses an unknown body field, and nothing changes.

A real daemon app served from this process (so the parse can be counted), a real bound reference agent as the
caller, its binding secret read from its environment, MCP messages POSTed to the tool endpoint."""

import json
import threading

import pytest

from compozy import parsing
from compozy.api import SECRET_ENV, TOOL_SERVER_PATH, TOOLS
from compozy.cli.client import Client
from compozy.errors import CompozyError
from compozy.paths import ensure_auth_token
from tests.harness.api import run_turn, spath
from tests.harness.served import ServedManager
from tests.test_tool_server import agent_environment


@pytest.fixture(scope="module")
def bound(tmp_path_factory):
    """(served, api, caller, peer, secret): a caller whose agent is bound, a peer in its workspace."""
    root = tmp_path_factory.mktemp("tool-edge")
    (root / "work").mkdir()
    served = ServedManager(root / "home").start()
    try:
        api = Client(served.http_url, token=ensure_auth_token(served.home), timeout=30)
        caller, peer = (api.call("POST", "/api/sessions", {"workspace_path": str(root / "work"), "name": name})[1][
            "session"] for name in ("caller", "peer"))
        run_turn(api, caller, "warm")
        yield served, api, caller, peer, agent_environment(api, caller)[SECRET_ENV]
    finally:
        served.close()


def call_tool(served, secret, name, arguments):
    status, body = Client(served.http_url, timeout=60).exchange("POST", TOOL_SERVER_PATH + secret, {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    assert status == 200, body
    return json.loads(body)["result"]


@pytest.fixture
def parses(monkeypatch):
    """Every parse while the test runs (the edges call parsing.parse): (operation name, whether it ran inside the
    tool server's edge, parsing.parse_tool)."""
    seen, inside, real_parse, real_tool = [], threading.local(), parsing.parse, parsing.parse_tool

    def parse(operation, *args, **keywords):
        seen.append((operation.name, getattr(inside, "tool", False)))
        return real_parse(operation, *args, **keywords)

    def parse_tool(*args, **keywords):
        inside.tool = True
        try:
            return real_tool(*args, **keywords)
        finally:
            inside.tool = False
    monkeypatch.setattr(parsing, "parse", parse)
    monkeypatch.setattr(parsing, "parse_tool", parse_tool)
    return seen


def test_each_tool_call_is_parsed_once_and_the_facade_takes_the_request(bound, parses):
    served, _, caller, peer, secret = bound
    calls = [("compozy__session_describe", {}), ("compozy__session_describe", {"session_id": peer["id"]}),
             ("compozy__session_list", {"limit": 10, "state": "active"}),
             ("compozy__session_history", {"session_id": caller["id"], "limit": 5}),
             ("compozy__session_prompt", {"session_id": peer["id"], "message": "hello", "idempotency_key": "k1",
                                          "wait": True}),
             ("compozy__session_create", {"name": "made"}),
             ("compozy__session_create", {"name": "kid", "spawn": {"ttl": "1m"}}),
             ("compozy__session_stop", {"session_id": peer["id"], "wait": True}),
             ("compozy__session_archive", {"session_id": peer["id"]})]
    for name, arguments in calls:
        parses.clear()
        result = call_tool(served, secret, name, arguments)
        assert not result["isError"], (name, result["structuredContent"])
        assert parses == [(TOOLS[name].name, True)], (name, parses)  # once, at the tool edge, never at the façade
    assert result["structuredContent"]["session"]["archived"] is True


def test_a_stop_without_wait_is_filled_in_at_the_edge_and_noted():
    call = TOOLS["compozy__session_stop"].parse_tool({"session_id": "sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY"},
                                                     "sess_01J9Z3N4B6C8D0E2F4G6H8J0KM", "ws_1")
    assert (call.request.wait, call.defaulted, call.target) == (True, ("wait",), "sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY")
    prompt = TOOLS["compozy__session_prompt"].parse_tool(
        {"session_id": "sess_x", "message": "hi", "idempotency_key": "k", "wait": True}, "sess_me", "ws_1")
    assert (prompt.options.wait, prompt.options.notify_on_complete) == (True, None)
    assert "wait" not in prompt.request and prompt.request.message_id == parsing.tool_message_id("sess_me", "k")
    assert prompt.request.path == {"workspace": "ws_1", "session_id": "sess_x"}


@pytest.mark.parametrize("arguments, why", [({"limit": "10"}, "limit must be"), ({"limit": 0}, "between 1 and 1000"),
                                            ({"state": "sleeping"}, "state must be one of")])
def test_a_query_tools_arguments_are_json_held_to_their_types_and_bounds(bound, arguments, why):
    served, _, _, _, secret = bound
    result = call_tool(served, secret, "compozy__session_list", arguments)
    assert result["isError"] and result["structuredContent"]["code"] == "invalid_request"
    assert why in result["structuredContent"]["error"]


def kept_back(operation):
    """The operation's fields its tool does not pass through (the workspace is the caller's, never an argument)."""
    return sorted(set({**(operation.body or {}), **operation.query}) - set(operation.tool.fields))


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_an_argument_a_tool_does_not_take_is_refused_as_over_http_and_changes_nothing(bound, name):
    served, api, caller, peer, secret = bound
    before = api.call("GET", "/api/sessions", query={"archive": "include"})[1]["page"]["total"]
    events = api.call("GET", spath(peer, "events"))[1]["events"]
    target = {"session_id": peer["id"]} if TOOLS[name].tool.target else {}
    for unknown in ("colour", *kept_back(TOOLS[name])):
        result = call_tool(served, secret, name, {**target, unknown: "x"})
        assert result["isError"], (name, unknown)
        assert (result["structuredContent"]["code"], result["structuredContent"]["details"]) == (
            "invalid_request", {"fields": [unknown]}), (name, unknown, result["structuredContent"])
    with pytest.raises(CompozyError) as over_http:
        api.call("POST", spath(peer, "prompt"), {"message": "x", "colour": "x"})
    assert (over_http.value.code, over_http.value.details) == ("invalid_request", {"fields": ["colour"]})
    assert api.call("GET", "/api/sessions", query={"archive": "include"})[1]["page"]["total"] == before
    assert api.call("GET", spath(peer, "events"))[1]["events"] == events
