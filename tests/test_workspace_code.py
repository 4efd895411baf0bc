"""No code from the workspace (issue 21, high 2): every time compozy runs itself again (the reference
agent, the stdio MCP relay, `daemon start`'s child) it imports compozy from where it is installed,
whatever the current folder holds. An agent may write `compozy/__init__.py` into its workspace; it
must never run.
"""

import json
import subprocess
import sys

import pytest

from compozy.cli.client import Client
from compozy.location import self_command
from tests.harness.api import run_turn, spath
from tests.harness.cli import run_cli
from tests.harness.daemon import ENTRY, DaemonProcess, test_environment as cli_environment

PLANTED = 'open({marker!r}, "a").write("{name} imported from the workspace\\n")\n'


@pytest.fixture
def planted(tmp_path):
    """(workspace, marker): a workspace holding a compozy package that writes the marker when imported."""
    workspace = (tmp_path / "ws").resolve()
    package = workspace / "compozy"
    package.mkdir(parents=True)
    marker = tmp_path / "planted-code-ran"
    for name in ("__init__.py", "__main__.py"):
        (package / name).write_text(PLANTED.format(marker=str(marker), name=name))
    return workspace, marker


def test_a_turn_and_the_stdio_relay_run_in_a_planted_workspace_never_import_it(home, planted):
    workspace, marker = planted
    daemon = DaemonProcess(home, env={"COMPOZY_REFERENCE_NO_MCP_HTTP": "1"}).start()  # the agent takes the relay
    try:
        api = Client(daemon.socket_url, timeout=60)
        session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
        answer = run_turn(api, session, "[mcp compozy__session_describe] hello")
        text = "".join(e["content"].get("text", "") for e in answer if e["type"] == "agent_message")
        assert "mcp compozy__session_describe: {" in text and session["id"] in text  # the relay answered
        api.call("POST", spath(session, "stop"), {"wait": True})
    finally:
        daemon.stop()
    assert not marker.exists(), marker.read_text()


def test_daemon_start_from_a_planted_folder_never_imports_it(home, planted):
    workspace, marker = planted
    started = subprocess.run([sys.executable, ENTRY, "daemon", "start", "--http", "127.0.0.1:0", "-o", "json"],
                             cwd=workspace, env=cli_environment(home), capture_output=True, text=True, timeout=120)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert json.loads(started.stdout)["pid"] > 0
        assert run_cli(home, "session", "list", "-q").returncode == 0  # the daemon answers
    finally:
        run_cli(home, "daemon", "stop")
    assert not marker.exists(), marker.read_text()


def test_every_way_compozy_runs_itself_skips_the_current_folder(planted):
    workspace, marker = planted
    ran = subprocess.run([*self_command("--version")], cwd=workspace, env=cli_environment(workspace.parent),
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and "compozy, version" in ran.stdout, ran.stderr
    assert not marker.exists()
    assert self_command()[1] == "-P"  # Python 3.11+: no unsafe first entry on sys.path
