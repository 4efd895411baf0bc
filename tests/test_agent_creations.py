"""What agents may create (issue 21, medium 5), from the outside: a real daemon, real bound reference agents,
their binding secrets read from their environment, and the official MCP client (tests.test_tool_server.use)
and the identity headers
as a program the agent runs would use them. A spawned child creates nothing that could outlive its TTL;
the depth and tree caps are in spec/tools/tools-agent-trees-are-bounded.yaml, the wakes and the TTL
checks in spec/messaging/messaging-reply-wake-never-revives-a-reaped-child.yaml and tests/test_children.py.
"""

import pytest

from compozy.api import SECRET_ENV, SECRET_HEADER, SESSION_HEADER, TOOL_SERVER_PATH
from compozy.cli.client import Client as Api
from compozy.errors import CompozyError
from tests.harness.api import run_turn, spath, wait_for
from tests.test_tool_server import agent_environment, bound, relay, stop, use

ESCAPES = (("compozy__session_create", {"name": "escape"}),
           ("compozy__session_create", {"name": "grandchild", "spawn": {"ttl": "1m"}}),
           ("compozy__session_continue", {"session_id": None, "agent_name": "general", "idempotency_key": "c1",
                                          "message": "go on"}),
           ("compozy__session_fork", {"session_id": None, "idempotency_key": "f1"}))


@pytest.fixture
def api(daemon):
    return Api(daemon.http_url, timeout=30)


def test_a_spawned_child_creates_nothing_through_either_transport_or_its_identity_headers(daemon, api, workspace):
    parent, parent_secret = bound(api, workspace, "parent")
    try:
        _, (spawned,) = use(daemon.http_url + TOOL_SERVER_PATH + parent_secret,
                            ("compozy__session_create", {"name": "child", "spawn": {"ttl": "30m"}}))
        child = spawned.structured_content["session"]
        run_turn(api, child, "warm")  # the child's own agent, bound: its secret is live
        secret = agent_environment(api, child)[SECRET_ENV]
        calls = [(name, {**arguments, **({"session_id": parent["id"]} if "session_id" in arguments else {})})
                 for name, arguments in ESCAPES]
        _, over_http = use(daemon.http_url + TOOL_SERVER_PATH + secret, *calls)
        _, over_relay = use(relay(daemon, secret), *calls)
        with pytest.raises(CompozyError) as by_headers:
            api.call("POST", "/api/sessions", {"workspace_path": str(workspace), "name": "by-headers"},
                     headers={SESSION_HEADER: child["id"], SECRET_HEADER: secret})
        total = api.call("GET", "/api/sessions", query={"archive": "include"})[1]["page"]["total"]
    finally:
        stop(api, parent)
    for result in (*over_http, *over_relay):
        assert result.is_error and result.structured_content["code"] == "spawn_depth_exceeded", result
        assert result.structured_content["details"] == {"session_id": child["id"], "session_type": "spawned"}
    assert (by_headers.value.http_status, by_headers.value.code) == (403, "spawn_depth_exceeded")
    assert total == 2  # the parent and its child: nothing else was created
    wait_for(lambda: api.call("GET", spath(child))[1]["session"]["state"] == "stopped", what="the child reaped")
