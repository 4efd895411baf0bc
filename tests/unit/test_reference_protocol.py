"""The reference agent's newer ACP surface, each switched by its configuration so both sides are testable:
auth methods of the three types and the terminal login, session/resume and session/close, session modes,
available commands, usage with cost, titles, the [methods] journal and an opening failure that carries data."""

import os
import subprocess
import sys
import time

from compozy.acp.protocol import Notification, Response
from tests.unit.test_reference_agent import REPO_ROOT, open_session, prompt, reply_text, updates
from tests.unit.test_reference_agent import spawn, workdir  # noqa: F401 (fixtures, found by name)

TERMINAL = {"auth": {"terminal": True}}


def initialize(agent, capabilities=None):
    response, _ = agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
    assert response.error is None, response.error
    return response.result


def new_session(agent, workdir):
    return agent.call("session/new", {"cwd": str(workdir), "mcpServers": []})


def test_auth_methods_of_each_type_and_a_terminal_one_only_for_a_client_that_runs_it(spawn):
    env = {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1", "COMPOZY_REFERENCE_AUTH_METHODS": "agent,env,terminal"}
    methods = initialize(spawn(**env))["authMethods"]
    assert [(m.get("type", "agent"), m["id"]) for m in methods] == [("agent", "reference-login"),
                                                                    ("env_var", "reference-key")]
    assert methods[1]["vars"] == [{"name": "REFERENCE_API_KEY"}]
    methods = initialize(spawn(**env), TERMINAL)["authMethods"]
    assert methods[2] == {"type": "terminal", "id": "reference-terminal", "name": "Reference terminal login",
                          "description": "Run the agent in a terminal to log in", "args": ["--login"],
                          "env": {"COMPOZY_REFERENCE_LOGIN": "1"}}


def test_the_env_method_authenticates_only_with_its_variable_set(spawn, workdir):
    env = {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1", "COMPOZY_REFERENCE_AUTH_METHODS": "env"}
    agent = spawn(**env)
    initialize(agent)
    response, _ = agent.call("authenticate", {"methodId": "reference-key"})
    assert response.error == {"code": -32603, "message": "Internal error", "data": "REFERENCE_API_KEY is not set"}
    assert new_session(agent, workdir)[0].error["code"] == -32000
    agent = spawn(REFERENCE_API_KEY="sk-reference-0123456789", **env)
    initialize(agent)
    assert agent.call("authenticate", {"methodId": "reference-key"})[0].result == {}
    assert new_session(agent, workdir)[0].result["sessionId"].startswith("ref_")


def test_a_refused_agent_login_carries_its_reason_in_data(spawn):
    agent = spawn(COMPOZY_REFERENCE_REQUIRE_AUTH="1", COMPOZY_REFERENCE_AUTH_REFUSE="1")
    initialize(agent)
    response, _ = agent.call("authenticate", {"methodId": "reference-login"})
    assert response.error == {"code": -32000, "message": "Authentication failed",
                              "data": {"details": "the reference login is switched off"}}


def test_a_terminal_method_is_never_authenticated_but_its_login_opens_sessions(spawn, workdir, tmp_path):
    env = {"COMPOZY_REFERENCE_REQUIRE_AUTH": "1", "COMPOZY_REFERENCE_AUTH_METHODS": "terminal"}
    agent = spawn(**env)
    initialize(agent, TERMINAL)
    assert agent.call("authenticate", {"methodId": "reference-terminal"})[0].error["code"] == -32602
    assert new_session(agent, workdir)[0].error["code"] == -32000
    login = _run_login(tmp_path, ["--login"], {"COMPOZY_LOGIN_EXTRA": "x"})
    assert login.returncode == 3, "the method's args alone are not its whole launch"
    login = _run_login(tmp_path, ["--login"], {"COMPOZY_REFERENCE_LOGIN": "1"})
    assert (login.returncode, login.stdout) == (0, "Reference agent: logged in\n")
    agent = spawn(**env)
    initialize(agent, TERMINAL)
    assert new_session(agent, workdir)[0].result["sessionId"].startswith("ref_")


def _run_login(tmp_path, args, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOZY_REFERENCE_")}
    env.update(PYTHONPATH=str(REPO_ROOT), COMPOZY_REFERENCE_STATE=str(tmp_path / "state"), **extra)
    return subprocess.run([sys.executable, "-m", "compozy.agents.reference", *args], env=env, capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_resume_keeps_the_history_without_replaying_it(spawn, workdir):
    first = spawn(COMPOZY_REFERENCE_RESUME="1")
    session_id, _ = open_session(first, workdir)
    prompt(first, session_id, "alpha")
    second = spawn(COMPOZY_REFERENCE_RESUME="1")
    assert initialize(second)["agentCapabilities"]["sessionCapabilities"] == {"resume": {}}
    response, seen = second.call("session/resume", {"sessionId": session_id, "cwd": str(workdir)})
    assert "configOptions" in response.result and updates(seen) == []
    response, seen = prompt(second, session_id, "[recall] [methods]")
    assert reply_text(seen) == "methods: initialize session/resume history: alpha"
    without = spawn()
    initialize(without)
    assert without.call("session/resume", {"sessionId": session_id, "cwd": str(workdir)})[0].error["code"] == -32601


def test_close_counts_in_the_session_state_and_frees_the_session(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_CLOSE="1")
    session_id, _ = open_session(agent, workdir)
    assert agent.call("session/close", {"sessionId": session_id})[0].result == {}
    assert prompt(agent, session_id, "gone?")[0].error["code"] == -32002
    assert agent.call("session/load", {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []})[0].result
    assert reply_text(prompt(agent, session_id, "[closes]")[1]) == "closes: 1 echo: "


def test_modes_are_offered_set_and_switched_by_the_agent(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_MODES="1")
    session_id, opened = open_session(agent, workdir)
    assert opened["modes"]["currentModeId"] == "default"
    assert [m["id"] for m in opened["modes"]["availableModes"]] == ["default", "plan"]
    assert agent.call("session/set_mode", {"sessionId": session_id, "modeId": "fly"})[0].error["code"] == -32602
    assert agent.call("session/set_mode", {"sessionId": session_id, "modeId": "plan"})[0].result == {}
    assert reply_text(prompt(agent, session_id, "[mode]")[1]) == "mode: plan echo: "
    _, seen = prompt(agent, session_id, "[switch-mode default] [mode]")
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "default"} in updates(seen)
    assert "modes" not in open_session(spawn(), workdir)[1]


def test_commands_follow_the_answer_that_opened_the_session(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_COMMANDS="1")
    initialize(agent)
    request_id = agent.request("session/new", {"cwd": str(workdir), "mcpServers": []})
    seen = agent.until(lambda m: isinstance(m, Notification))
    assert isinstance(seen[0], Response) and seen[0].id == request_id
    assert [c["name"] for c in seen[-1].params["update"]["availableCommands"]] == ["echo", "recall"]


def test_an_opening_failure_carries_its_reason_in_data_and_colours_its_stderr(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_FAIL_OPEN="1")
    initialize(agent)
    response, _ = new_session(agent, workdir)
    assert response.error == {"code": -32603, "message": "Internal error",
                              "data": {"details": "Reference process exited with code 1 (COMPOZY_REFERENCE_FAIL_OPEN)"}}
    deadline = time.monotonic() + 5
    while "\x1b[31mfatal:" not in agent.stderr() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "\x1b[31mfatal:\x1b[0m cannot reach the model with key (none)\n" in agent.stderr()


def test_a_start_delay_holds_the_initialize_answer(spawn):
    agent = spawn(COMPOZY_REFERENCE_START_DELAY="0.4")
    started = time.monotonic()
    initialize(agent)
    assert time.monotonic() - started >= 0.4


def test_usage_reports_a_cumulative_cost_and_title_proposes_a_name(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    first = [u for u in updates(prompt(agent, session_id, "[usage]")[1]) if u["sessionUpdate"] == "usage_update"]
    second = [u for u in updates(prompt(agent, session_id, "[usage]")[1]) if u["sessionUpdate"] == "usage_update"]
    assert [first[0]["cost"], second[0]["cost"]] == [{"amount": 0.25, "currency": "USD"},
                                                     {"amount": 0.5, "currency": "USD"}]
    [info] = [u for u in updates(prompt(agent, session_id, "[title Fix the login flow]")[1])
              if u["sessionUpdate"] == "session_info_update"]
    assert info["title"] == "Fix the login flow" and info["updatedAt"]


def test_methods_reports_what_this_process_was_asked_with_refusals_by_code(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_REQUIRE_AUTH="1")
    initialize(agent)
    assert new_session(agent, workdir)[0].error["code"] == -32000
    agent.call("authenticate", {"methodId": "reference-login"})
    session_id = new_session(agent, workdir)[0].result["sessionId"]
    assert reply_text(prompt(agent, session_id, "[methods]")[1]) == (
        "methods: initialize session/new!-32000 authenticate(reference-login) session/new echo: ")
