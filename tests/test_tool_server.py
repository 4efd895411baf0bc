"""The native tool server from the outside, against a real daemon and a real bound agent.

The official MCP client SDK (`mcp`) talks to it over both transports, the streamable HTTP endpoint
and the `compozy mcp relay` stdio command, as the agent it was offered to would. The binding
secret is read where the daemon put it, in the bound agent's environment; it must stop working
when its binding ends. The agent identity headers of an HTTP/UDS create are checked here too.
"""

import json
import subprocess
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from compozy.api import SECRET_ENV, SECRET_HEADER, SESSION_ENV, SESSION_HEADER, TOOL_SERVER_PATH, TOOLS
from compozy.cli.client import Client as Api
from compozy.errors import CompozyError
from tests.harness.api import run_turn, spath, wait_for
from tests.harness.daemon import ENTRY, ROOT, DaemonProcess, test_environment as cli_environment


def create(api, workspace, **fields):
    return api.call("POST", "/api/sessions", {"workspace_path": str(workspace), **fields})[1]["session"]


def bound(api, workspace, name="caller"):
    """A session with a live agent (one turn run), and the binding secret in that agent's environment."""
    session = create(api, workspace, name=name)
    run_turn(api, session, "warm")
    return session, agent_environment(api, session)[SECRET_ENV]


def agent_environment(api, session):
    pid = api.call("GET", spath(session, "inspect"))[1]["process"]["pid"]
    with open(f"/proc/{pid}/environ", "rb") as handle:
        return dict(item.decode().split("=", 1) for item in handle.read().split(b"\0") if b"=" in item)


def stop(api, session):
    return api.call("POST", spath(session, "stop"), {"wait": True})[1]


def relay(daemon, secret):
    return StdioServerParameters(command=sys.executable, args=[ENTRY, "--url", daemon.socket_url, "mcp", "relay"],
                                 env={"PYTHONPATH": str(ROOT), SECRET_ENV: secret})


def use(server, *calls):
    """Connect with the official client, list the tools, make the calls; (tools, results)."""
    async def main():
        async with Client(server) as client:
            listed = await client.list_tools()
            return listed.tools, [await client.call_tool(name, arguments) for name, arguments in calls]
    return anyio.run(main)


@pytest.fixture
def api(daemon):
    return Api(daemon.http_url, timeout=30)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_the_official_client_lists_and_calls_the_tools(daemon, api, workspace, transport):
    caller, secret = bound(api, workspace)
    peer = create(api, workspace, name="peer")
    server = daemon.http_url + TOOL_SERVER_PATH + secret if transport == "http" else relay(daemon, secret)
    try:
        tools, (describe, listing, refused, invalid) = use(
            server, ("compozy__session_describe", {}), ("compozy__session_list", {"limit": 10}),
            ("compozy__session_stop", {"session_id": caller["id"], "wait": True}),
            ("compozy__session_describe", {"session_id": peer["id"], "workspace": "elsewhere"}))
    finally:
        stop(api, caller)
    assert {tool.name for tool in tools} == set(TOOLS)
    prompt = next(tool for tool in tools if tool.name == "compozy__session_prompt")
    assert prompt.input_schema["required"] == ["session_id", "message"]
    assert {"wait", "notify_on_complete", "mode", "idempotency_key"} <= set(prompt.input_schema["properties"])
    assert prompt.input_schema["additionalProperties"] is False
    assert not describe.is_error
    assert describe.structured_content["session"]["id"] == caller["id"]
    assert json.loads(describe.content[0].text) == describe.structured_content  # the same JSON as text
    assert [s["id"] for s in listing.structured_content["sessions"]] == [peer["id"], caller["id"]]
    assert refused.is_error and refused.structured_content["code"] == "session_is_caller"
    assert json.loads(refused.content[0].text) == refused.structured_content
    assert invalid.is_error and invalid.structured_content["details"] == {"fields": ["workspace"]}


def test_a_prompt_with_wait_answers_the_turn_over_the_relay(daemon, api, workspace):
    caller, secret = bound(api, workspace)
    worker = create(api, workspace, name="worker")
    try:
        _, (answered,) = use(relay(daemon, secret), ("compozy__session_prompt", {
            "session_id": worker["id"], "message": "[chunks 2] slowly", "wait": True}))
    finally:
        stop(api, caller)
        stop(api, worker)
    assert answered.structured_content["answer"] == {
        "turn_id": answered.structured_content["prompt"]["turn_id"], "end": "done", "stop_reason": "end_turn",
        "text": "chunk 1 chunk 2 echo: slowly", "truncated": False}


def test_a_parent_stops_its_own_spawned_child_and_no_other(daemon, api, workspace):
    """A spawned child is daemon-managed: users and other sessions' agents get session_daemon_managed,
    but the agent that spawned it may end it with compozy__session_stop before its TTL does."""
    parent, parent_secret = bound(api, workspace, "parent")
    other, other_secret = bound(api, workspace, "other")
    try:
        _, (spawned,) = use(daemon.http_url + TOOL_SERVER_PATH + parent_secret, (
            "compozy__session_create", {"name": "child", "spawn": {"ttl": "30m"}}))
        child = spawned.structured_content["session"]
        _, (by_other,) = use(daemon.http_url + TOOL_SERVER_PATH + other_secret, (
            "compozy__session_stop", {"session_id": child["id"], "wait": True}))
        _, (by_parent,) = use(relay(daemon, parent_secret), (
            "compozy__session_stop", {"session_id": child["id"], "wait": True}))
    finally:
        stop(api, parent)
        stop(api, other)
    assert by_other.is_error and by_other.structured_content["code"] == "session_daemon_managed"
    assert not by_parent.is_error, by_parent.structured_content
    assert by_parent.structured_content == {**by_parent.structured_content, "state": "stopped", "verified": True}
    stopped = api.call("GET", spath(child))[1]["session"]
    assert (stopped["state"], stopped["stop_detail"]) == ("stopped", f"stopped by its parent session {parent['id']}")


def test_a_secret_stops_working_when_its_binding_ends(daemon, api, workspace):
    caller, secret = bound(api, workspace)
    use(daemon.http_url + TOOL_SERVER_PATH + secret, ("compozy__session_describe", {}))
    stop(api, caller)
    status, body = Api(daemon.http_url).exchange("POST", TOOL_SERVER_PATH + secret,
                                                 {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    answer = json.loads(body)
    assert status == 401
    assert answer["id"] is None and answer["error"]["data"]["code"] == "agent_identity_invalid"
    for server in (daemon.http_url + TOOL_SERVER_PATH + secret, relay(daemon, secret)):
        assert refused_connection(server).data["code"] == "agent_identity_invalid"


def test_a_replaced_agent_gets_a_new_secret_and_the_old_one_ends(home, workspace):
    (home / "config.toml").write_text(f'[providers.other]\ncommand = ["{sys.executable}", "-m", '
                                      '"compozy.agents.reference"]\n')
    daemon = DaemonProcess(home).start()
    api = Api(daemon.http_url, timeout=30)
    try:
        caller, first = bound(api, workspace)
        api.call("POST", spath(caller, "prompt"), {"message": "again", "runtime": {"provider": "other"}})
        second = wait_for(lambda: agent_environment(api, caller)[SECRET_ENV] != first
                          and agent_environment(api, caller)[SECRET_ENV], what="a replacement agent")
        assert ping(daemon, first) == 401
        _, (describe,) = use(daemon.http_url + TOOL_SERVER_PATH + second, ("compozy__session_describe", {}))
        assert describe.structured_content["session"]["id"] == caller["id"]
        stop(api, caller)
    finally:
        daemon.stop()


def test_an_idle_released_agent_takes_its_secret_with_it(home, workspace):
    (home / "config.toml").write_text('[session.supervision]\nidle_release_after = "2s"\n')
    daemon = DaemonProcess(home).start()
    api = Api(daemon.http_url, timeout=30)
    try:
        caller, secret = bound(api, workspace)
        assert ping(daemon, secret) == 200
        wait_for(lambda: api.call("GET", spath(caller, "inspect"))[1]["process"] is None, what="the idle release")
        assert ping(daemon, secret) == 401
        assert api.call("GET", spath(caller))[1]["session"]["state"] == "active"
    finally:
        daemon.stop()


def test_the_endpoint_keeps_the_guards_of_every_route(daemon, api, workspace):
    caller, secret = bound(api, workspace)
    try:
        with pytest.raises(CompozyError) as refused:
            api.call("POST", TOOL_SERVER_PATH + secret, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                     headers={"Origin": "http://evil.example"})
        not_allowed = Api(daemon.http_url).exchange("GET", TOOL_SERVER_PATH + secret, None)[0]
    finally:
        stop(api, caller)
    assert (refused.value.http_status, refused.value.code) == (403, "origin_not_allowed")
    assert not_allowed == 405  # no event stream is offered


def test_identity_headers_make_the_caller_the_parent_and_forged_ones_are_refused(daemon, api, workspace, tmp_path):
    caller, secret = bound(api, workspace)
    other = tmp_path / "other"
    other.mkdir()
    identity = {SESSION_HEADER: caller["id"], SECRET_HEADER: secret}
    try:
        _, child = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)}, headers=identity)
        _, explicit = api.call("POST", "/api/sessions", {"workspace_path": str(workspace),
                                                         "parent_session_id": child["session"]["id"]}, headers=identity)
        _, elsewhere = api.call("POST", "/api/sessions", {"workspace_path": str(other)}, headers=identity)
        refusals = [_refusal(api, workspace, headers) for headers in (
            {SESSION_HEADER: caller["id"], SECRET_HEADER: "forged"},
            {SESSION_HEADER: child["session"]["id"], SECRET_HEADER: secret},
            {SECRET_HEADER: secret}, {SESSION_HEADER: caller["id"]})]
    finally:
        stop(api, caller)
    assert child["session"]["lineage"] == {"kind": "provenance", "parent_session_id": caller["id"],
                                           "root_session_id": caller["id"], "spawn_depth": 1}
    assert explicit["session"]["lineage"]["parent_session_id"] == child["session"]["id"]
    assert elsewhere["session"]["lineage"]["parent_session_id"] is None  # provenance only within the workspace
    assert refusals == [(401, "agent_identity_invalid")] * 4
    assert _refusal(api, workspace, identity) == (401, "agent_identity_invalid")  # the binding ended
    total = api.call("GET", "/api/sessions")[1]["page"]["total"]
    assert total == 4  # the caller, the two children and the one elsewhere: nothing from the refusals


def test_the_cli_run_by_a_bound_agent_sends_its_identity(daemon, api, workspace):
    caller, secret = bound(api, workspace)
    env = cli_environment(daemon.home, {SESSION_ENV: caller["id"], SECRET_ENV: secret})
    try:
        created = subprocess.run([sys.executable, ENTRY, "--url", daemon.socket_url, "session", "new", "--cwd",
                                  str(workspace), "-o", "json"], env=env, capture_output=True, text=True, timeout=60)
    finally:
        stop(api, caller)
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["session"]["lineage"]["parent_session_id"] == caller["id"]


def ping(daemon, secret):
    return Api(daemon.http_url).exchange("POST", TOOL_SERVER_PATH + secret, {"jsonrpc": "2.0", "method": "ping",
                                                                             "id": 1})[0]


def refused_connection(server):
    """The MCPError the official client meets when it connects (it may come wrapped in exception groups)."""
    try:
        use(server)
    except BaseException as exc:  # noqa: BLE001 (searched below)
        found = [exc]
        while found:
            error = found.pop()
            if isinstance(error, MCPError):
                return error
            found += list(getattr(error, "exceptions", ())) + [e for e in (error.__cause__, error.__context__) if e]
        raise
    raise AssertionError("the connection was not refused")


def _refusal(api, workspace, headers):
    try:
        api.call("POST", "/api/sessions", {"workspace_path": str(workspace)}, headers=headers)
    except CompozyError as exc:
        return exc.http_status, exc.code
    return None
