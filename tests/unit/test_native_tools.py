"""The native tool server's pure parts: what each agent is offered, the MCP messages, the tool schemas."""

import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from compozy.acp.client import mcp_servers
from compozy.api import SECRET_ENV, TOOLS
from compozy.manager import SessionManager
from compozy.mcp import server, tools
from compozy.operation import ANY, OTHERS, OTHERS_AND_CHILDREN, TARGETS, Tool
from compozy.session.turns.identity import Identities, ToolEndpoints

SECRET = "s3cr3t-value"
ROOT = Path(__file__).resolve().parents[2]


def offer(http_url="http://127.0.0.1:4242"):
    return Identities(ToolEndpoints(http_url, "/home/me/.compozy/daemon.sock")).offer(SECRET, "sess_1")


def agent(**capabilities):
    return SimpleNamespace(caps=capabilities)


def test_an_agent_that_speaks_mcp_over_http_gets_the_url_with_its_secret():
    (entry,) = mcp_servers(agent(mcpCapabilities={"http": True}), offer())
    assert entry == {"type": "http", "name": "compozy", "url": f"http://127.0.0.1:4242/mcp/{SECRET}", "headers": []}


@pytest.mark.parametrize("capabilities", [{}, {"mcpCapabilities": {"http": False, "sse": True}},
                                          {"mcpCapabilities": "yes"}])
def test_any_other_agent_gets_the_relay_with_its_secret_in_the_environment_never_in_argv(capabilities):
    (entry,) = mcp_servers(agent(**capabilities), offer())
    assert entry["name"] == "compozy" and "type" not in entry
    argv = [entry["command"], *entry["args"]]
    assert argv[-4:] == ["--url", "unix:///home/me/.compozy/daemon.sock", "mcp", "relay"]
    assert not any(SECRET in part for part in argv)
    env = {pair["name"]: pair["value"] for pair in entry["env"]}
    assert env[SECRET_ENV] == SECRET and env["COMPOZY_SESSION_ID"] == "sess_1"


def test_without_tcp_even_an_http_agent_gets_the_relay():
    assert "command" in mcp_servers(agent(mcpCapabilities={"http": True}), offer(http_url=None))[0]


def test_no_endpoints_no_server():
    assert mcp_servers(agent(mcpCapabilities={"http": True}), Identities().offer(SECRET, "sess_1")) == []


def test_a_secret_names_its_caller_only_while_its_runtime_serves_the_session():
    identities = Identities()
    session = SimpleNamespace(id="sess_1", runtime=None, candidate=None, record=SimpleNamespace(workspace_id="ws_1"))
    runtime = SimpleNamespace(released=False, alive=True)
    secret = identities.issue(session)
    identities.attach(secret, runtime)
    assert identities.caller(secret) is None  # launched, not yet bound
    session.candidate = runtime
    assert identities.caller(secret).id == "sess_1"
    session.runtime, session.candidate = runtime, None
    assert identities.caller(secret).workspace_id == "ws_1"
    runtime.released = True
    assert identities.caller(secret) is None
    runtime.released, session.runtime = False, SimpleNamespace(released=False, alive=True)
    assert identities.caller(secret) is None  # replaced
    assert identities.caller("guessed") is None and identities.caller(None) is None


def handle(message):
    return server.handle(manager=None, caller=None, message=message)


@pytest.mark.parametrize("asked, answered", [("2025-06-18", "2025-06-18"), ("2024-11-05", "2024-11-05"),
                                             ("2099-01-01", "2025-11-25"), (None, "2025-11-25")])
def test_initialize_answers_the_clients_version_when_it_speaks_it(asked, answered):
    answer = handle({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": asked}})
    assert answer["result"]["protocolVersion"] == answered
    assert answer["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert answer["result"]["serverInfo"]["name"] == "compozy"


def test_notifications_and_responses_get_no_answer_and_other_messages_a_jsonrpc_error():
    assert handle({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert handle({"jsonrpc": "2.0", "id": 3, "result": {}}) is None
    assert handle({"jsonrpc": "2.0", "id": 4, "method": "ping"}) == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert handle({"jsonrpc": "2.0", "id": 5, "method": "resources/list"})["error"]["code"] == -32601
    assert handle([{"jsonrpc": "2.0", "id": 6, "method": "ping"}])["error"]["code"] == -32600  # no batches
    assert handle({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "nope"}})["error"][
        "code"] == -32602
    assert handle({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "compozy__session_list", "arguments": [1]}})["error"]["code"] == -32602


def test_every_tool_is_listed_with_a_closed_schema_of_its_arguments():
    listed = {tool["name"]: tool for tool in handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[
        "result"]["tools"]}
    assert set(listed) == set(TOOLS)
    assert all(tool["inputSchema"]["additionalProperties"] is False for tool in listed.values())
    assert listed["compozy__session_describe"]["inputSchema"]["properties"] == {
        "session_id": {"type": "string", "maxLength": 64, "pattern": "^[^\\x00]*$"}}
    assert "required" not in listed["compozy__session_describe"]["inputSchema"]
    assert listed["compozy__session_list"]["inputSchema"]["properties"]["limit"] == {
        "type": "integer", "minimum": 1, "maximum": 1000}
    assert set(listed["compozy__session_create"]["inputSchema"]["properties"]) == {"agent_name", "name", "spawn"}
    assert listed["compozy__session_describe"]["annotations"] == {"readOnlyHint": True}
    assert listed["compozy__session_stop"]["annotations"] == {"readOnlyHint": False}


def test_a_result_carries_the_document_as_structured_content_and_as_the_same_json_text():
    document = {"session": {"id": "sess_1", "name": "é"}}
    result = tools.result(document)
    assert result["structuredContent"] == document and result["isError"] is False
    assert json.loads(result["content"][0]["text"]) == document
    assert tools.result({"code": "x"}, error=True)["isError"] is True


TOOL_SERVER = [*sorted((ROOT / "compozy" / "mcp").glob("*.py")), ROOT / "compozy" / "http" / "tool_server.py"]


@pytest.mark.parametrize("path", TOOL_SERVER, ids=lambda path: path.name)
def test_the_tool_server_names_no_tool_its_rules_are_the_entries(path):
    """A new tool is its table entry alone: the tool server keeps no list of tool names (the governed rules
    are Tool.targets, creates_session and deprecated_defaults)."""
    source = path.read_text(encoding="utf-8")
    assert [name for name in TOOLS if name in source or name.removeprefix("compozy__") in source] == []
    assert "compozy__" not in source


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_declares_the_rules_its_facade_method_takes(name):
    """The façade learns the caller only where the entry declares why: `caller_id` for a tool that may
    reach the caller's own spawned children, a creator (`creator`, or the identity the operation reads)
    for one that creates a session; a tool that may aim at its caller is one that defaults to it or
    derives from it."""
    operation = TOOLS[name]
    tool = operation.tool
    taken = set(inspect.signature(getattr(SessionManager, operation.facade)).parameters)
    assert tool.targets in TARGETS
    assert ("caller_id" in taken) == (tool.targets == OTHERS_AND_CHILDREN)
    assert bool(taken & {"creator", "identity"}) == tool.creates_session
    assert "spawn" not in tool.extra or tool.creates_session
    assert set(tool.deprecated_defaults) <= set(tool.defaults)


def test_the_governed_rules_as_declared():
    declared = {name: (operation.tool.targets, operation.tool.creates_session) for name, operation in TOOLS.items()}
    assert {name for name, (targets, _) in declared.items() if targets != ANY} == {
        "compozy__session_prompt", "compozy__session_stop", "compozy__session_archive"}
    assert {name for name, (targets, _) in declared.items() if targets == OTHERS_AND_CHILDREN} == {
        "compozy__session_stop", "compozy__session_archive"}
    assert {name for name, (_, creates) in declared.items() if creates} == {
        "compozy__session_create", "compozy__session_continue", "compozy__session_fork"}
    assert TOOLS["compozy__session_stop"].tool.deprecation(("wait",)) == (
        "compozy__session_stop without an explicit wait is deprecated; send wait true or false")
    assert TOOLS["compozy__session_stop"].tool.deprecation(()) is None


def test_an_entry_with_contradictory_rules_is_refused():
    with pytest.raises(ValueError):
        Tool("compozy__x", "x", targets="nobody")
    with pytest.raises(ValueError):
        Tool("compozy__x", "x", target="caller", targets=OTHERS)  # defaults to the caller yet refuses it
    with pytest.raises(ValueError):
        Tool("compozy__x", "x", deprecated_defaults={"wait": "send wait"})  # no such default
