"""docs/agents.md: every recipe is a config.toml fragment the daemon's loader accepts, and the opencode
recipe runs `opencode acp` for real (initialize, session/new, cancel, stop, session/load) when
COMPOZY_INTEROP=1 and opencode is installed (npm `opencode-ai`); it is kept out of CI's time budget."""

import os
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from compozy.config import from_document
from compozy.launch_aliases import resolve
from tests.harness.cli import cli_json, run_cli
from tests.test_daemon import wait_for

ROOT = Path(__file__).resolve().parents[1]
AGENTS_DOC = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
RECIPE = re.compile(r"^## (.+?)\n.*?```toml\n(.*?)```", re.S | re.M)
RECIPES = dict(RECIPE.findall(AGENTS_DOC))


def test_the_doc_has_a_recipe_for_each_agent_the_issue_names():
    assert set(RECIPES) == {"Claude Code", "Codex", "Gemini CLI", "opencode", "Qwen Code", "Any other ACP agent",
                            "Launch aliases (Cursor)"}


@pytest.mark.parametrize("title", sorted(RECIPES))
def test_every_recipe_is_a_config_the_daemon_accepts(title):
    config = from_document(tomllib.loads(RECIPES[title]), f"docs/agents.md ({title})")
    added = set(config.agents) - {"general"}
    assert len(added) == 1, added
    agent = config.agent(added.pop())
    assert config.provider(agent.provider).command


def test_the_launch_alias_example_resolves_as_documented():
    config = from_document(tomllib.loads(RECIPES["Launch aliases (Cursor)"]))
    cursor = config.provider("cursor")
    assert resolve(cursor, {"model": "grok-4.6", "speed": "fast"}).args == ("--model", "grok-4.6-fast")
    assert resolve(cursor, {"model": "grok-4.6", "reasoning_effort": "high"}).args == ("--model", "grok-4.6")


@pytest.mark.skipif(os.environ.get("COMPOZY_INTEROP") != "1", reason="interop with real agents is opt-in: "
                    "COMPOZY_INTEROP=1 (it downloads nothing, but starts opencode, which takes seconds)")
@pytest.mark.skipif(shutil.which("opencode") is None, reason="opencode is not installed (npm install -g opencode-ai)")
def test_opencode_recipe_starts_opens_cancels_stops_and_loads(home, workspace):
    (home / "config.toml").write_text(RECIPES["opencode"] + '\ndefault_agent = "opencode"\n')
    (home / "config.toml").chmod(0o600)
    from tests.harness.daemon import DaemonProcess
    daemon = DaemonProcess(home).start()
    try:
        sid = cli_json(home, "session", "new", "--cwd", str(workspace))["session"]["id"]
        # initialize and session/new happen before the admission answers; without a model the turn never ends.
        admitted = run_cli(home, "session", "prompt", sid, "say hi", "--detach", timeout=300)
        assert admitted.returncode == 0, admitted.stderr
        first = cli_json(home, "session", "get", sid)["session"]["runtime"]
        assert first["status"] == "ready" and first["acp_session_id"]
        assert run_cli(home, "session", "cancel", sid).returncode == 0
        stopped = cli_json(home, "session", "stop", sid, "--wait")
        assert stopped["verified"] is True
        # A prompt after the stop binds a new opencode process that loads the same ACP session.
        assert run_cli(home, "session", "prompt", sid, "again", "--detach", timeout=300).returncode == 0
        wait_for(lambda: cli_json(home, "session", "get", sid)["session"]["runtime"]["status"] == "ready",
                 timeout=120, what="opencode to bind again")
        assert cli_json(home, "session", "get", sid)["session"]["runtime"]["acp_session_id"] == first["acp_session_id"]
        assert cli_json(home, "session", "stop", sid, "--wait")["verified"] is True
    finally:
        daemon.stop()
