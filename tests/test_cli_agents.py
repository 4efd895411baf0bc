"""`compozy agent list`, `compozy config check`, `default_agent`, and `compozy daemon reload` / SIGHUP,
through the real CLI against a real daemon."""

import json
import os
import signal
import sys

from tests.harness.cli import cli_json, run_cli
from tests.test_daemon import wait_for

TWO_AGENTS = '''
default_agent = "coder"
[providers.ref2]
command = ["python3", "-m", "compozy.agents.reference"]
env = {EXAMPLE_API_KEY = "s3cret-value"}
[providers.absent]
command = ["compozy-no-such-agent-acp"]
[agents.coder]
provider = "ref2"
model = "echo-1"
[agents.ghost]
provider = "absent"
'''


def write_config(home, text):
    path = home / "config.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_agent_list_shows_provider_command_found_and_default(home, daemon):
    listed = run_cli(daemon.home, "agent", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[:3] == ["general", "*", "reference"]
    write_config(daemon.home, TWO_AGENTS)
    assert run_cli(daemon.home, "daemon", "reload").returncode == 0
    rows = {line.split()[0]: line for line in run_cli(daemon.home, "agent", "list").stdout.splitlines()}
    assert set(rows) == {"coder", "general", "ghost"}
    assert "coder *" in rows["coder"] and "model=echo-1" in rows["coder"] and " yes " in rows["coder"]
    assert " NO " in rows["ghost"] and "compozy-no-such-agent-acp" in rows["ghost"]
    assert run_cli(daemon.home, "agent", "list", "-q").stdout.split() == ["coder", "general", "ghost"]
    assert "s3cret-value" not in run_cli(daemon.home, "agent", "list", "-o", "json").stdout


def test_config_check_prints_what_it_resolved_or_the_problems(home):
    missing = run_cli(home, "config", "check")
    assert missing.returncode == 0, missing.stderr
    assert "no file: the defaults" in missing.stdout and "default agent  general" in missing.stdout
    write_config(home, TWO_AGENTS)
    valid = cli_json(home, "config", "check")
    assert valid["default_agent"] == "coder"
    assert valid["providers"]["absent"]["found"] is False
    assert valid["providers"]["absent"]["installed"]["installed"] is False
    assert valid["providers"]["ref2"]["installed"]["installed"] is True
    assert valid["providers"]["ref2"]["env"] == ["EXAMPLE_API_KEY"]
    text = run_cli(home, "config", "check").stdout
    assert "NOT FOUND on PATH: compozy-no-such-agent-acp" in text
    path = write_config(home, 'default_agent = "nobody"\n[agents.x]\nprovider = "nowhere"\n')
    invalid = run_cli(home, "config", "check")
    assert invalid.returncode == 1
    assert f"{path}: default_agent: names unknown agent 'nobody'" in invalid.stdout
    assert "agents.x: names unknown provider 'nowhere'" in invalid.stdout


def test_reload_new_sessions_see_the_config_live_ones_keep_their_binding(home, daemon, workspace):
    live = cli_json(daemon.home, "session", "new", "--cwd", str(workspace))["session"]["id"]
    assert run_cli(daemon.home, "session", "prompt", live, "bind me").returncode == 0
    process = cli_json(daemon.home, "session", "inspect", live)["process"]

    write_config(daemon.home, TWO_AGENTS)
    reloaded = run_cli(daemon.home, "daemon", "reload")
    assert reloaded.returncode == 0, reloaded.stderr
    assert "reloaded" in reloaded.stdout
    assert cli_json(daemon.home, "session", "new", "--cwd", str(workspace))["session"]["agent_name"] == "coder"
    # The live session keeps its agent and its process, and still answers.
    assert run_cli(daemon.home, "session", "prompt", live, "still here").returncode == 0
    after = cli_json(daemon.home, "session", "inspect", live)
    assert after["session"]["agent_name"] == "general"
    assert after["process"]["pid"] == process["pid"]

    # An invalid file is refused with its problems; the running configuration stays.
    write_config(daemon.home, 'default_agent = "nobody"\n')
    refused = run_cli(daemon.home, "daemon", "reload")
    assert refused.returncode == 1
    assert "nobody" in refused.stderr
    assert cli_json(daemon.home, "agent", "list")["default_agent"] == "coder"

    # SIGHUP does the same as the command.
    write_config(daemon.home, 'default_agent = "general"\n')
    before = json.loads((daemon.home / "daemon.json").read_text())["config_loaded_at"]
    os.kill(daemon.process.pid, signal.SIGHUP)
    wait_for(lambda: json.loads((daemon.home / "daemon.json").read_text())["config_loaded_at"] != before,
             what="the daemon to reload on SIGHUP")
    assert cli_json(daemon.home, "agent", "list")["default_agent"] == "general"


def test_binding_progress_on_stderr_and_the_handshake_timeout_setting(home, daemon, workspace):
    write_config(daemon.home, '[providers.mute]\ncommand = ["python3", "-c", "import time; time.sleep(120)"]\n'
                              'handshake_timeout = "1s"\n[agents.mute]\nprovider = "mute"\n')
    assert run_cli(daemon.home, "daemon", "reload").returncode == 0
    sid = cli_json(daemon.home, "session", "new", "--cwd", str(workspace))["session"]["id"]
    first = run_cli(daemon.home, "session", "prompt", sid, "hi")
    assert first.returncode == 0, first.stderr
    python = os.path.basename(sys.executable)  # the reference agent runs on the daemon's own interpreter
    assert f"starting general ({python} -P -m compozy agent reference)…" in first.stderr
    assert "ready after " in first.stderr
    again = run_cli(daemon.home, "session", "prompt", sid, "again")
    assert "starting" not in again.stderr  # its agent runs already

    mute = cli_json(daemon.home, "session", "new", "--cwd", str(workspace), "--agent", "mute")["session"]["id"]
    silent = run_cli(daemon.home, "session", "prompt", mute, "anyone?")
    assert silent.returncode == 1
    assert "starting mute (python3 -c import time; time.sleep(120))…" in silent.stderr
    assert "failed after " in silent.stderr
    assert "Error: provider_unavailable: " in silent.stderr and "initialize" in silent.stderr
