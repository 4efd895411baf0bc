"""Drives the real reference agent subprocess over pipes with JSON-RPC lines."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from compozy.acp import protocol
from compozy.acp.protocol import Notification, ProtocolIssue, Request, Response

REPO_ROOT = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 5.0
END_OF_STREAM = b""
BOOLEAN_CAPS = {"fs": {"readTextFile": True, "writeTextFile": True}, "session": {"configOptions": {"boolean": {}}}}


class AgentProcess:
    """One reference agent subprocess; stdout lines are pumped into a queue so every wait has a timeout."""

    def __init__(self, tmp_path: Path, env: dict, label: str):
        self.tmp_path = tmp_path
        self.stderr_path = tmp_path / f"agent-{label}.stderr"
        with open(self.stderr_path, "wb") as stderr_file:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "compozy.agents.reference"], cwd=tmp_path, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr_file,
            )
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._pump_stdout, daemon=True)
        self.reader.start()
        self.next_id = 1

    def _pump_stdout(self) -> None:
        for line in iter(self.process.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(END_OF_STREAM)

    def send(self, message: dict) -> None:
        self.process.stdin.write(protocol.encode(message))
        self.process.stdin.flush()

    def request(self, method: str, params: dict) -> int:
        request_id, self.next_id = self.next_id, self.next_id + 1
        self.send(protocol.make_request(request_id, method, params))
        return request_id

    def notify(self, method: str, params: dict) -> None:
        self.send(protocol.make_notification(method, params))

    def next_line(self, timeout: float = WAIT_SECONDS) -> bytes:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"agent said nothing for {timeout}s; stderr:\n{self.stderr()}") from None

    def next_message(self, timeout: float = WAIT_SECONDS):
        line = self.next_line(timeout)
        assert line != END_OF_STREAM, f"agent closed stdout; stderr:\n{self.stderr()}"
        message = protocol.parse_line(line)
        assert not isinstance(message, ProtocolIssue), message
        return message

    def until(self, predicate, timeout: float = WAIT_SECONDS) -> list:
        """Messages up to and including the first one matching predicate."""
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            seen.append(self.next_message(max(0.01, deadline - time.monotonic())))
            if predicate(seen[-1]):
                return seen

    def response_to(self, request_id: int) -> tuple[Response, list]:
        seen = self.until(lambda message: isinstance(message, Response) and message.id == request_id)
        return seen[-1], seen[:-1]

    def call(self, method: str, params: dict) -> tuple[Response, list]:
        return self.response_to(self.request(method, params))

    def agent_request(self, method: str) -> tuple[Request, list]:
        seen = self.until(lambda message: isinstance(message, Request) and message.method == method)
        return seen[-1], seen[:-1]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_exit(self, timeout: float = WAIT_SECONDS) -> int:
        return self.process.wait(timeout=timeout)

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(timeout=2)
        self.process.stdout.close()


def updates(messages: list, session_id: str | None = None) -> list[dict]:
    return [message.params["update"] for message in messages
            if isinstance(message, Notification) and message.method == "session/update"
            and (session_id is None or message.params.get("sessionId") == session_id)]


def reply_text(messages: list, session_id: str | None = None) -> str:
    return "".join(update["content"]["text"] for update in updates(messages, session_id)
                   if update["sessionUpdate"] == "agent_message_chunk")


def text_prompt(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


@pytest.fixture
def workdir(tmp_path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def spawn(tmp_path):
    agents = []

    def start(**env_overrides) -> AgentProcess:
        env = {key: value for key, value in os.environ.items() if not key.startswith("COMPOZY_REFERENCE_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        env["COMPOZY_REFERENCE_STATE"] = str(tmp_path / "state")
        env.update(env_overrides)
        agent = AgentProcess(tmp_path, env, str(len(agents)))
        agents.append(agent)
        return agent

    yield start
    for agent in agents:
        agent.close()


def open_session(agent: AgentProcess, workdir: Path, capabilities: dict | None = None) -> tuple[str, dict]:
    response, _ = agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
    assert response.error is None, response.error
    response, _ = agent.call("session/new", {"cwd": str(workdir), "mcpServers": []})
    assert response.error is None, response.error
    return response.result["sessionId"], response.result


def start_prompt(agent: AgentProcess, session_id: str, text: str) -> int:
    return agent.request("session/prompt", {"sessionId": session_id, "prompt": text_prompt(text)})


def prompt(agent: AgentProcess, session_id: str, text: str) -> tuple[Response, list]:
    return agent.response_to(start_prompt(agent, session_id, text))


def test_initialize_answers_version_one_and_its_capabilities(spawn):
    agent = spawn()
    response, _ = agent.call("initialize", {"protocolVersion": 7, "clientCapabilities": {}})
    assert response.result == {
        "protocolVersion": 1,
        "agentCapabilities": {"loadSession": True,
                              "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                              "mcpCapabilities": {"http": True, "sse": False},
                              "sessionCapabilities": {}},
        "agentInfo": {"name": "compozy-reference", "title": "Compozy reference agent", "version": "1"},
        "authMethods": [],
    }


def test_initialize_with_steering_advertises_it(spawn):
    response, _ = spawn(COMPOZY_REFERENCE_STEERING="1").call("initialize", {"protocolVersion": 1})
    assert response.result["agentCapabilities"]["_meta"] == {"compozy.dev/steering": True}
    assert response.result["_meta"] == {"compozy.dev/steering": True}


def test_prompt_echoes_the_text_in_one_chunk(spawn, workdir):
    agent = spawn()
    session_id, session = open_session(agent, workdir)
    assert session_id.startswith("ref_")
    assert [option["id"] for option in session["configOptions"]] == ["model", "reasoning_effort", "speed"]
    response, seen = prompt(agent, session_id, "  hello world ")
    assert response.result == {"stopReason": "end_turn"}
    [chunk] = updates(seen, session_id)
    assert chunk["sessionUpdate"] == "agent_message_chunk"
    assert chunk["content"] == {"type": "text", "text": "echo: hello world"}
    assert chunk["messageId"]


def test_chunks_share_one_message_id_and_the_echo_follows(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    response, seen = prompt(agent, session_id, "[chunks 3] counting [nope]")
    chunks = updates(seen)
    texts = [chunk["content"]["text"] for chunk in chunks]
    assert texts == ["chunk 1 ", "chunk 2 ", "chunk 3 ", "echo: counting [nope]"]
    assert len({chunk["messageId"] for chunk in chunks}) == 1
    assert response.result["stopReason"] == "end_turn"


def test_config_option_change_takes_effect_and_is_validated(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_MODELS="small, echo-large")
    session_id, session = open_session(agent, workdir)
    model = session["configOptions"][0]
    assert model["currentValue"] == "small" and [o["value"] for o in model["options"]] == ["small", "echo-large"]
    response, _ = agent.call("session/set_config_option",
                             {"sessionId": session_id, "configId": "model", "value": "echo-large"})
    assert [option["id"] for option in response.result["configOptions"]] == ["model", "reasoning_effort", "speed"]
    assert response.result["configOptions"][0]["currentValue"] == "echo-large"
    _, seen = prompt(agent, session_id, "quiet please")
    assert reply_text(seen) == "echo: QUIET PLEASE"
    bad_value, _ = agent.call("session/set_config_option",
                              {"sessionId": session_id, "configId": "speed", "value": "warp"})
    bad_id, _ = agent.call("session/set_config_option",
                           {"sessionId": session_id, "configId": "colour", "value": "red"})
    assert bad_value.error["code"] == bad_id.error["code"] == protocol.INVALID_PARAMS
    assert "warp" in bad_value.error["message"] and "colour" in bad_id.error["message"]
    mode, _ = agent.call("session/set_mode", {"sessionId": session_id, "modeId": "code"})
    assert mode.result == {}


def test_boolean_thinking_option_only_when_the_client_supports_it(spawn, workdir):
    agent = spawn()
    session_id, session = open_session(agent, workdir, BOOLEAN_CAPS)
    thinking = {"id": "thinking", "name": "Thinking", "type": "boolean", "currentValue": False}
    assert session["configOptions"][-1] == thinking
    response, _ = agent.call("session/set_config_option",
                             {"sessionId": session_id, "configId": "thinking", "type": "boolean", "value": True})
    assert response.result["configOptions"][-1]["currentValue"] is True
    _, seen = prompt(agent, session_id, "hmm")
    first, second = updates(seen)
    assert first["sessionUpdate"] == "agent_thought_chunk" and first["content"]["text"] == "thinking about it"
    assert second["content"]["text"] == "echo: hmm"


def test_unknown_method_and_notification(spawn):
    agent = spawn()
    agent.notify("_vendor/whatever", {})
    response, seen = agent.call("no/such_method", {})
    assert seen == []
    assert response.error == {"code": -32601, "message": "Method not found", "data": {"method": "no/such_method"}}


def test_invalid_session_params_and_unknown_session(spawn, workdir):
    agent = spawn()
    open_session(agent, workdir)
    relative, _ = agent.call("session/new", {"cwd": "relative/dir", "mcpServers": []})
    no_servers, _ = agent.call("session/new", {"cwd": str(workdir)})
    unknown, _ = agent.call("session/prompt", {"sessionId": "ref_nope", "prompt": text_prompt("hi")})
    assert relative.error["code"] == no_servers.error["code"] == protocol.INVALID_PARAMS
    assert unknown.error["code"] == protocol.RESOURCE_NOT_FOUND


def test_session_load_replays_history_after_a_restart(spawn, workdir):
    first = spawn()
    session_id, _ = open_session(first, workdir)
    prompt(first, session_id, "alpha")
    first.call("session/set_config_option", {"sessionId": session_id, "configId": "speed", "value": "fast"})
    prompt(first, session_id, "beta")
    first.close()
    second = spawn()
    second.call("initialize", {"protocolVersion": 1})
    response, seen = second.call("session/load", {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []})
    replayed = [(update["sessionUpdate"], update["content"]["text"]) for update in updates(seen, session_id)]
    assert replayed == [("user_message_chunk", "alpha"), ("agent_message_chunk", "echo: alpha"),
                        ("user_message_chunk", "beta"), ("agent_message_chunk", "echo: beta")]
    assert all(update["messageId"] for update in updates(seen))
    assert response.result["configOptions"][2]["currentValue"] == "fast"
    _, seen = prompt(second, session_id, "[recall]")
    assert reply_text(seen) == "history: alpha | beta"


def test_fork_clones_a_session_that_a_later_process_loads(spawn, workdir):
    first = spawn(COMPOZY_REFERENCE_FORK="1")
    response, _ = first.call("initialize", {"protocolVersion": 1})
    assert response.result["agentCapabilities"]["sessionCapabilities"] == {"fork": {}}
    session_id, _ = open_session(first, workdir)
    prompt(first, session_id, "alpha")
    forked, seen = first.call("session/fork", {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []})
    clone_id = forked.result["sessionId"]
    assert clone_id.startswith("ref_") and clone_id != session_id and updates(seen) == []
    prompt(first, session_id, "only in the source")
    first.close()
    second = spawn()
    second.call("initialize", {"protocolVersion": 1})
    second.call("session/load", {"sessionId": clone_id, "cwd": str(workdir), "mcpServers": []})
    _, seen = prompt(second, clone_id, "[recall]")
    assert reply_text(seen) == "history: alpha"


def test_fork_is_unknown_without_its_switch_and_refused_with_the_failure_switch(spawn, workdir):
    plain = spawn()
    session_id, _ = open_session(plain, workdir)
    params = {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []}
    assert plain.call("session/fork", params)[0].error["code"] == protocol.METHOD_NOT_FOUND
    failing = spawn(COMPOZY_REFERENCE_FORK="1", COMPOZY_REFERENCE_FORK_FAIL="1")
    session_id, _ = open_session(failing, workdir)
    refused, _ = failing.call("session/fork", {**params, "sessionId": session_id})
    assert refused.error["code"] == protocol.INTERNAL_ERROR and "fork refused" in refused.error["message"]


def test_load_of_an_unknown_session_is_resource_not_found(spawn, workdir):
    agent = spawn()
    agent.call("initialize", {"protocolVersion": 1})
    params = {"sessionId": "ref_" + "0" * 32, "cwd": str(workdir), "mcpServers": []}
    response, _ = agent.call("session/load", params)
    assert response.error["code"] == -32002 and response.error["message"] == "Resource not found"


def test_no_load_env_disables_session_load(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_NO_LOAD="1")
    response, _ = agent.call("initialize", {"protocolVersion": 1})
    assert response.result["agentCapabilities"]["loadSession"] is False
    load, _ = agent.call("session/load", {"sessionId": "ref_x", "cwd": str(workdir), "mcpServers": []})
    assert load.error["code"] == protocol.METHOD_NOT_FOUND


@pytest.mark.parametrize("option_id, status, text", [
    ("allow-once", "completed", "permission granted: allow-once "),
    ("reject-always", "failed", "permission denied: reject-always "),
])
def test_permission_answer_decides_the_tool_call(spawn, workdir, option_id, status, text):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    prompt_id = start_prompt(agent, session_id, "[permission edit] go")
    ask, seen = agent.agent_request("session/request_permission")
    [tool_call] = updates(seen)
    assert tool_call == {"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Reference edit",
                         "kind": "edit", "status": "pending",
                         "locations": [{"path": str(workdir / "reference-edit.txt")}]}
    assert ask.id == 0
    assert ask.params["toolCall"] == {"toolCallId": "call_1", "title": "Reference edit", "kind": "edit"}
    option_ids = [option["optionId"] for option in ask.params["options"]]
    assert option_ids == ["allow-once", "allow-always", "reject-once", "reject-always"]
    agent.send(protocol.make_result(ask.id, {"outcome": {"outcome": "selected", "optionId": option_id}}))
    response, seen = agent.response_to(prompt_id)
    assert updates(seen)[0] == {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": status}
    assert reply_text(seen) == text + "echo: go"
    assert response.result == {"stopReason": "end_turn"}


@pytest.mark.parametrize("spec, options", [
    ("go/allow_once/Go ahead | never/reject_always/Never",
     [{"optionId": "go", "kind": "allow_once", "name": "Go ahead"},
      {"optionId": "never", "kind": "reject_always", "name": "Never"}]),
    ("only/allow_always/Yes, always", [{"optionId": "only", "kind": "allow_always", "name": "Yes, always"}]),
    ("odd/switch_mode | bare", [{"optionId": "odd", "kind": "switch_mode"}, {"optionId": "bare"}]),
    ("x//Nameless kind", [{"optionId": "x", "name": "Nameless kind"}]),
    ("none", []),
])
def test_permission_offers_the_options_the_directive_names(spawn, workdir, spec, options):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    start_prompt(agent, session_id, f"[permission edit {spec}] go")
    ask, _ = agent.agent_request("session/request_permission")
    assert ask.params["options"] == options


@pytest.mark.parametrize("option_id, status, text", [
    ("go", "completed", "permission granted: go "),  # granted by the offered option's kind, whatever its ID
    ("allow-once", "failed", "permission invalid: allow-once "),  # not offered: never taken as a grant
    ("odd", "failed", "permission denied: odd "),  # a kind it does not know denies
])
def test_the_answer_counts_only_as_an_offered_option(spawn, workdir, option_id, status, text):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    prompt_id = start_prompt(agent, session_id, "[permission edit go/allow_once/Go | odd/switch_mode/Odd] go")
    ask, _ = agent.agent_request("session/request_permission")
    agent.send(protocol.make_result(ask.id, {"outcome": {"outcome": "selected", "optionId": option_id}}))
    response, seen = agent.response_to(prompt_id)
    assert updates(seen)[0] == {"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": status}
    assert reply_text(seen) == text + "echo: go"


def test_cancel_while_asking_permission_ends_the_turn_cancelled(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    prompt_id = start_prompt(agent, session_id, "[permission execute]")
    ask, _ = agent.agent_request("session/request_permission")
    agent.notify("session/cancel", {"sessionId": session_id})
    agent.send(protocol.make_result(ask.id, {"outcome": {"outcome": "cancelled"}}))
    response, seen = agent.response_to(prompt_id)
    assert updates(seen) == [{"sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "failed"}]
    assert response.result == {"stopReason": "cancelled"}


def test_fs_write_and_read_go_through_the_client(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir, BOOLEAN_CAPS)
    prompt_id = start_prompt(agent, session_id, "[write notes/a.txt hello] [read b.txt] [write c.txt x]")
    write, seen = agent.agent_request("fs/write_text_file")
    assert write.params == {"sessionId": session_id, "path": str(workdir / "notes" / "a.txt"), "content": "hello"}
    agent.send(protocol.make_result(write.id, None))
    read, more = agent.agent_request("fs/read_text_file")
    assert read.params == {"sessionId": session_id, "path": str(workdir / "b.txt")}
    agent.send(protocol.make_result(read.id, {"content": "bee"}))
    refused, more_still = agent.agent_request("fs/write_text_file")
    agent.send(protocol.make_error(refused.id, protocol.METHOD_NOT_FOUND, "Method not found"))
    response, rest = agent.response_to(prompt_id)
    assert (write.id, read.id, refused.id) == (0, 1, 2)
    expected = "wrote notes/a.txt read: bee write refused: Method not found echo: "
    assert reply_text(seen + more + more_still + rest) == expected
    assert response.result == {"stopReason": "end_turn"}


def test_cancel_during_hold_answers_cancelled(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    prompt_id = start_prompt(agent, session_id, "[hold gate] never")
    agent.until(lambda message: updates([message]) and updates([message])[0]["content"]["text"] == "holding gate ")
    started = time.monotonic()
    agent.notify("session/cancel", {"sessionId": session_id})
    response, seen = agent.response_to(prompt_id)
    assert response.result == {"stopReason": "cancelled"}
    assert time.monotonic() - started < 1.0
    assert reply_text(seen) == ""


def test_hold_finishes_when_the_gate_file_appears_and_a_second_prompt_is_refused(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    prompt_id = start_prompt(agent, session_id, "[hold g1] done")
    agent.until(lambda message: isinstance(message, Notification))
    busy, _ = prompt(agent, session_id, "again")
    assert busy.error == {"code": -32603, "message": "prompt already running"}
    (workdir / ".compozy-gates").mkdir()
    (workdir / ".compozy-gates" / "g1").touch()
    response, seen = agent.response_to(prompt_id)
    assert reply_text(seen) == "echo: done" and response.result == {"stopReason": "end_turn"}


def test_crash_once_kills_the_process_and_the_replay_completes(spawn, workdir):
    first = spawn()
    session_id, _ = open_session(first, workdir)
    start_prompt(first, session_id, "[crash 2 once] boom")
    assert first.wait_exit() == -signal.SIGKILL
    second = spawn()
    second.call("initialize", {"protocolVersion": 1})
    loaded, seen = second.call("session/load", {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []})
    assert loaded.error is None
    assert [update["content"]["text"] for update in updates(seen)] == ["[crash 2 once] boom"]
    response, seen = prompt(second, session_id, "[crash 2 once] boom")
    assert reply_text(seen) == "chunk 1 chunk 2 echo: boom"
    assert response.result == {"stopReason": "end_turn"}


def test_crash_without_once_crashes_every_time(spawn, workdir):
    first = spawn()
    session_id, _ = open_session(first, workdir)
    start_prompt(first, session_id, "[crash 0]")
    assert first.wait_exit() == -signal.SIGKILL
    second = spawn()
    second.call("session/load", {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []})
    start_prompt(second, session_id, "[crash 0]")
    assert second.wait_exit() == -signal.SIGKILL


def test_stdin_eof_exits_promptly_even_during_a_prompt(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    start_prompt(agent, session_id, "[hold forever]")
    agent.until(lambda message: isinstance(message, Notification))
    started = time.monotonic()
    agent.process.stdin.close()
    assert agent.wait_exit() == 0
    assert time.monotonic() - started < 1.0


def test_hang_ignores_cancel_and_eof(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    start_prompt(agent, session_id, "[chunks 1] [hang]")
    agent.until(lambda message: isinstance(message, Notification))
    agent.notify("session/cancel", {"sessionId": session_id})
    agent.process.stdin.close()
    with pytest.raises(subprocess.TimeoutExpired):
        agent.process.wait(timeout=0.4)
    agent.process.kill()
    assert agent.wait_exit() == -signal.SIGKILL


def test_garbage_lines_are_classified_by_the_protocol_module(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    prompt_id = start_prompt(agent, session_id, "[garbage] still here")
    splitter = protocol.LineSplitter()
    kinds, seen = [], []
    while not (seen and isinstance(seen[-1], Response) and seen[-1].id == prompt_id):
        for item in splitter.feed(agent.next_line()):
            parsed = item if isinstance(item, ProtocolIssue) else protocol.parse_line(item)
            if isinstance(parsed, ProtocolIssue):
                kinds.append(parsed.kind)
            elif parsed is not None:
                seen.append(parsed)
    assert kinds == ["not_json", "invalid_utf8", "not_object", "not_object", "line_too_long"]
    assert Response(987654, {}, None) in seen
    own_kinds = [update["sessionUpdate"] for update in updates(seen, session_id)]
    assert own_kinds == ["compaction_update", "agent_message_chunk"]
    assert updates(seen, "other-session")[0]["content"]["text"] == "leak"
    assert reply_text(seen, session_id) == "echo: still here"


def test_require_auth_gates_sessions_until_authenticate(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_REQUIRE_AUTH="1")
    response, _ = agent.call("initialize", {"protocolVersion": 1})
    assert response.result["authMethods"] == [{"id": "reference-login", "name": "Reference login"}]
    refused, _ = agent.call("session/new", {"cwd": str(workdir), "mcpServers": []})
    assert refused.error == {"code": -32000, "message": "Authentication required"}
    login, _ = agent.call("authenticate", {"methodId": "reference-login"})
    assert login.result == {}
    created, _ = agent.call("session/new", {"cwd": str(workdir), "mcpServers": []})
    assert created.result["sessionId"].startswith("ref_")


def test_fail_start_exits_two_before_reading(spawn):
    agent = spawn(COMPOZY_REFERENCE_FAIL_START="1")
    assert agent.wait_exit() == 2
    assert "FAIL_START" in agent.stderr()


def test_context_replay_is_history_not_new_turns(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    replay = ('<compozy_context_replay>\n[{"role":"user","text":"old question"},'
              '{"role":"assistant","text":"old answer"}]\n</compozy_context_replay>\nUser request:\n[recall]\n')
    response, seen = prompt(agent, session_id, replay)
    assert reply_text(seen) == "[context replayed: 2 messages] history: old question"
    _, seen = prompt(agent, session_id, "[recall]")
    assert reply_text(seen) == "history: old question | [recall]"


def test_steering_reaches_the_running_turn(spawn, workdir):
    agent = spawn(COMPOZY_REFERENCE_STEERING="1")
    session_id, _ = open_session(agent, workdir)
    idle, _ = agent.call("_compozy/steer", {"sessionId": session_id, "prompt": text_prompt("early")})
    assert idle.error == {"code": -32603, "message": "no prompt running"}
    prompt_id = start_prompt(agent, session_id, "[hold s] first")
    agent.until(lambda message: isinstance(message, Notification))
    steered, seen = agent.call("_compozy/steer", {"sessionId": session_id, "prompt": text_prompt("go left")})
    assert steered.result == {}
    seen += agent.until(lambda message: "steered: go left" in reply_text([message]))
    agent.notify("session/cancel", {"sessionId": session_id})
    response, _ = agent.response_to(prompt_id)
    assert response.result == {"stopReason": "cancelled"}
    _, seen = prompt(agent, session_id, "[recall]")
    assert reply_text(seen) == "history: [hold s] first | go left"


def test_stop_usage_plan_thought_and_tools(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    text = "[thought pondering] [plan] [tool Lint] [tool-open Dangle] [usage] [stop max_tokens] x"
    response, seen = prompt(agent, session_id, text)
    kinds = [update["sessionUpdate"] for update in updates(seen)]
    assert kinds == ["agent_thought_chunk", "plan", "tool_call", "tool_call_update", "tool_call", "usage_update",
                     "agent_message_chunk"]
    tool_update = updates(seen)[3]
    assert tool_update["status"] == "completed"
    assert tool_update["content"] == [{"type": "content", "content": {"type": "text", "text": "Lint done"}}]
    assert updates(seen)[4]["status"] == "in_progress" and updates(seen)[4]["title"] == "Dangle"
    assert len(updates(seen)[1]["entries"]) == 2
    assert response.result == {"stopReason": "max_tokens",
                               "usage": {"inputTokens": 1000, "outputTokens": 200, "totalTokens": 1200}}


FAKE_MCP_SERVER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    params = message.get("params") or {}
    if message["method"] == "tools/call":
        result = {"content": [{"type": "text", "text": json.dumps(params["arguments"])}],
                  "isError": params["name"] == "refused"}
    else:
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "fake"}}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def test_mcp_directive_calls_a_tool_on_the_offered_stdio_server(spawn, workdir, tmp_path):
    script = tmp_path / "fake_mcp_server.py"
    script.write_text(FAKE_MCP_SERVER)
    agent = spawn()
    agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    server = {"name": "fake", "command": sys.executable, "args": [str(script)], "env": [{"name": "X", "value": "1"}]}
    response, _ = agent.call("session/new", {"cwd": str(workdir), "mcpServers": [server]})
    session_id = response.result["sessionId"]
    response, seen = prompt(agent, session_id, '[mcp echo {"a":1}] [mcp refused] [mcp echo {oops}]')
    tool_updates = [u for u in updates(seen) if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert [(u["sessionUpdate"], u.get("status")) for u in tool_updates] == [
        ("tool_call", "in_progress"), ("tool_call_update", "completed"),
        ("tool_call", "in_progress"), ("tool_call_update", "failed")]
    assert tool_updates[0]["title"] == "echo" and tool_updates[0]["rawInput"] == {"a": 1}
    assert tool_updates[1]["rawOutput"] == {"content": [{"type": "text", "text": '{"a": 1}'}], "isError": False}
    text = reply_text(seen)
    assert text.startswith('mcp echo: {"a": 1} mcp refused: {} mcp echo error: arguments are not JSON:')
    assert text.endswith("echo: ") and response.result == {"stopReason": "end_turn"}


def test_mcp_directive_without_a_server_fails_the_tool_call(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    _, seen = prompt(agent, session_id, "[mcp compozy__session_list]")
    assert updates(seen)[1]["status"] == "failed"
    assert reply_text(seen) == "mcp compozy__session_list error: no MCP server was offered in mcpServers echo: "


def test_fail_answers_with_an_error_after_earlier_output(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    response, seen = prompt(agent, session_id, "[chunks 1] [fail] unreachable")
    assert reply_text(seen) == "chunk 1 "
    assert response.error == {"code": -32603, "message": "reference failure",
                              "data": {"details": "the prompt asked for [fail]"}}


def test_exit_and_stderr_directives(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    start_prompt(agent, session_id, "[stderr 64] [exit 7]")
    assert agent.wait_exit() == 7
    assert agent.stderr().count("x" * 63 + "\n") == 64 * 1024 // 64


def test_linger_sends_late_output_when_stdin_closes(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    _, seen = prompt(agent, session_id, "[linger 2] hi")
    assert reply_text(seen) == "echo: hi"
    agent.process.stdin.close()
    late = agent.until(lambda message: isinstance(message, Notification)
                       and message.params["update"]["content"]["text"] == "late 2 ")
    assert reply_text(late, session_id) == "late 1 late 2 "
    assert agent.wait_exit() == 0


def test_slow_cancel_delays_the_cancelled_answer(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    prompt_id = start_prompt(agent, session_id, "[hold h] [slow-cancel 0.3]")
    agent.until(lambda message: isinstance(message, Notification))
    started = time.monotonic()
    agent.notify("session/cancel", {"sessionId": session_id})
    response, _ = agent.response_to(prompt_id)
    assert response.result == {"stopReason": "cancelled"}
    assert time.monotonic() - started >= 0.3


def test_grandchild_pid_is_recorded(spawn, workdir):
    agent = spawn()
    session_id, _ = open_session(agent, workdir)
    _, seen = prompt(agent, session_id, "[grandchild setsid]")
    pid = int((workdir / ".compozy-pids" / "grandchildren").read_text().split()[0])
    try:
        assert reply_text(seen) == f"spawned {pid} echo: "
        assert os.getpgid(pid) == pid
    finally:
        os.kill(pid, signal.SIGKILL)


def test_gates_hold_initialize_session_new_session_load_and_the_exit(spawn, tmp_path, workdir):
    """COMPOZY_REFERENCE_GATES holds each named step until its gate file exists (tests hold windows open)."""
    gates = tmp_path / ".compozy-gates"  # initialize and exit: the process's cwd (tmp_path here)
    (workdir / ".compozy-gates").mkdir()
    agent = spawn(COMPOZY_REFERENCE_GATES="initialize=i,session/new=n,session/load=l,exit=x,bogus=y")
    asked = agent.request("initialize", {"protocolVersion": 1})
    with pytest.raises(AssertionError, match="said nothing"):
        agent.next_line(timeout=0.5)
    gates.mkdir()
    (gates / "i").touch()
    assert agent.response_to(asked)[0].result["protocolVersion"] == 1
    asked = agent.request("session/new", {"cwd": str(workdir), "mcpServers": []})
    with pytest.raises(AssertionError, match="said nothing"):
        agent.next_line(timeout=0.5)
    (workdir / ".compozy-gates" / "n").touch()
    session_id = agent.response_to(asked)[0].result["sessionId"]
    asked = agent.request("session/load", {"sessionId": session_id, "cwd": str(workdir), "mcpServers": []})
    with pytest.raises(AssertionError, match="said nothing"):
        agent.next_line(timeout=0.5)
    (workdir / ".compozy-gates" / "l").touch()
    assert agent.response_to(asked)[0].error is None
    agent.process.stdin.close()
    with pytest.raises(subprocess.TimeoutExpired):
        agent.wait_exit(timeout=0.5)  # held at its exit
    (gates / "x").touch()
    assert agent.wait_exit() == 0
