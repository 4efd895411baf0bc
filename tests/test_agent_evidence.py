"""Real agents end to end, through the real CLI and daemon with the reference agent: `compozy agent login`
(terminal and authenticate methods), an agent starting and a prompt without output as a person sees them
(CLI, attach, session reads), and the evidence a refused bind leaves in the daemon's log and crash bundle."""

import json
import re
import threading
from pathlib import Path

import pexpect

from compozy.cli.client import Client
from tests.harness.api import spath, wait_for
from tests.harness.cli import cli_json, run_cli, spawn_cli
from tests.test_cli_agents import write_config

REFERENCE = '["python3", "-m", "compozy.agents.reference"]'
SECRET = "sk-reference-0123456789abcdef"


def provider(name, env):
    pairs = ", ".join(f'{key} = "{value}"' for key, value in env.items())
    return f'[providers.{name}]\ncommand = {REFERENCE}\nenv = {{{pairs}}}\n[agents.{name}]\nprovider = "{name}"\n\n'


def configure(daemon, *providers, settings=""):
    write_config(daemon.home, settings + "".join(providers))
    reloaded = run_cli(daemon.home, "daemon", "reload")
    assert reloaded.returncode == 0, reloaded.stderr


def new_session(daemon, workspace, agent):
    return cli_json(daemon.home, "session", "new", "--cwd", str(workspace), "--agent", agent)["session"]["id"]


def test_a_terminal_login_runs_in_the_users_terminal_then_the_prompt_binds(daemon, workspace):
    configure(daemon, provider("tty", {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1",
                                       "COMPOZY_REFERENCE_AUTH_METHODS": "terminal"}))
    sid = new_session(daemon, workspace, "tty")
    refused = run_cli(daemon.home, "session", "prompt", sid, "in?")
    assert refused.returncode == 1
    assert "Next: run `compozy agent login tty --method reference-terminal` in a terminal" in refused.stderr

    wrong = run_cli(daemon.home, "agent", "login", "tty", "--method", "nope")
    assert wrong.returncode == 1
    assert "Error: invalid_request: provider 'tty' offers no auth method 'nope'; it offers: reference-terminal" \
        in wrong.stderr
    login = run_cli(daemon.home, "agent", "login", "tty")
    assert login.returncode == 0, login.stderr
    assert "Reference agent: logged in" in login.stdout  # the agent's own program, on this terminal
    assert "logged in: tty (reference-terminal)" in login.stdout

    answered = run_cli(daemon.home, "session", "prompt", sid, "[methods] in")
    assert answered.returncode == 0, answered.stderr
    assert "methods: initialize session/new echo: in" in answered.stdout  # never sent to authenticate


def test_an_agent_type_login_is_authenticated_once_and_a_refused_one_says_so(daemon, workspace):
    configure(daemon, provider("plain", {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1"}),
              provider("closed", {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1", "COMPOZY_REFERENCE_AUTH_REFUSE": "1"}))
    login = run_cli(daemon.home, "agent", "login", "plain")
    assert login.returncode == 0, login.stderr
    assert "logged in: plain (reference-login)" in login.stdout
    refused = run_cli(daemon.home, "agent", "login", "closed")
    assert refused.returncode == 1
    assert "Error: provider_auth_failure: provider 'closed' requires authentication" in refused.stderr
    assert "Authentication failed (-32000): the reference login is switched off" in refused.stderr
    free = run_cli(daemon.home, "agent", "login", "general")
    assert (free.returncode, free.stdout.strip()) == (0, "general needs no login: its agent offers no auth methods")
    assert run_cli(daemon.home, "agent", "login", "nobody").returncode == 1


def test_an_agent_starting_is_visible_in_the_session_read_and_on_the_cli(daemon, workspace):
    configure(daemon, provider("slow", {"COMPOZY_REFERENCE_START_DELAY": "2"}))
    client = Client(daemon.socket_url, timeout=60)
    sid = new_session(daemon, workspace, "slow")
    session = client.call("GET", f"/api/sessions/{sid}")[1]["session"]
    answered = threading.Thread(target=lambda: client.call("POST", spath(session, "prompt"), {"message": "hi"}))
    answered.start()
    starting = wait_for(lambda: client.call("GET", f"/api/sessions/{sid}")[1]["session"]["activity"].get("starting"),
                        what="the agent starting")
    assert (starting["agent"], starting["provider"]) == ("slow", "slow") and starting["since"]
    answered.join(60)
    assert "starting" not in client.call("GET", f"/api/sessions/{sid}")[1]["session"]["activity"]

    again = new_session(daemon, workspace, "slow")
    printed = run_cli(daemon.home, "session", "prompt", again, "hello")
    assert printed.returncode == 0 and "starting slow (python3 -m compozy.agents.reference)…" in printed.stderr


def test_a_prompt_without_output_is_said_in_words_on_the_cli_and_in_attach(daemon, workspace):
    configure(daemon, provider("commanding", {"COMPOZY_REFERENCE_COMMANDS": "1"}),
              settings='[session.supervision]\nfirst_output_after = "1s"\n\n')
    sid = new_session(daemon, workspace, "commanding")
    printed = run_cli(daemon.home, "session", "prompt", sid, "[sleep 2.5] late")
    assert printed.returncode == 0, printed.stderr
    assert re.search(r"\[no output from commanding after \d+ s; its stderr: \S", printed.stderr), printed.stderr
    assert "echo: late" in printed.stdout

    child = spawn_cli(daemon.home, "session", "attach", sid, "--last", "0", extra_env={"NO_COLOR": "1"})
    child.expect("Ctrl-D to detach")
    child.sendline("/help")
    child.expect("the agent's commands")
    child.expect(r"/echo\s+Echo the text back \(text to echo\)")
    child.sendline("/echo hi there")  # the agent's command goes to it as the prompt
    child.expect("echo: /echo hi there")
    child.sendline("[sleep 2.5] slow")
    child.expect(r"\[no output from commanding after \d s")
    child.expect("echo: slow")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()


def test_a_refused_bind_leaves_one_log_line_a_bundle_and_plain_redacted_stderr(daemon, workspace):
    configure(daemon, provider("failing", {"COMPOZY_REFERENCE_FAIL_OPEN": "1", "REFERENCE_API_KEY": SECRET}))
    sid = new_session(daemon, workspace, "failing")
    refused = run_cli(daemon.home, "session", "prompt", sid, "hello?")
    assert refused.returncode == 1
    assert "Internal error (-32603): Reference process exited with code 1" in refused.stderr
    log = (daemon.home / "logs" / "compozy.log").read_text()
    [line] = [line for line in log.splitlines() if f"session {sid}: bind failed" in line]
    assert "route 1 (failing): provider_unavailable: session/new failed: Internal error (-32603): Reference " \
           "process exited with code 1" in line
    assert "fatal: cannot reach the model with key [redacted]" in line and SECRET not in log and "\x1b" not in log

    session = cli_json(daemon.home, "session", "get", sid)["session"]
    bundle = json.loads(Path(session["failure"]["crash_bundle_path"]).read_text())
    assert bundle["agent_error"] == {"code": -32603, "message": "Internal error", "data": {
        "details": "Reference process exited with code 1 (COMPOZY_REFERENCE_FAIL_OPEN)"}}
    assert "fatal: cannot reach the model with key [redacted]" in bundle["stderr"]
    assert "\x1b" not in bundle["stderr"] and SECRET not in json.dumps(bundle)

    shown = run_cli(daemon.home, "session", "inspect", sid)
    assert "Agent stderr  (last_agent, last " in shown.stdout
    assert "fatal: cannot reach the model with key [redacted]" in shown.stdout
    got = run_cli(daemon.home, "session", "get", sid)
    assert 'Agent error   Internal error (-32603): {"details": "Reference process exited with code 1' in got.stdout
