"""ACP authentication's pure parts: the advertised methods by type, the one compozy may authenticate by itself,
and the refusal that names the methods, the one tried and the next command (acp.md sections 2.1, 2.2, 10)."""

from types import SimpleNamespace

import pytest

from compozy.acp import auth
from compozy.acp.driver import AcpError
from compozy.acp.refusal import BindFailure
from compozy.config import Provider

CODEX = [{"id": "chatgpt", "name": "Login with ChatGPT", "description": "Use your ChatGPT login"},
         {"type": "env_var", "id": "codex-api-key", "name": "Use CODEX_API_KEY",
          "vars": [{"name": "CODEX_API_KEY"}]},
         {"type": "env_var", "id": "openai-api-key", "name": "Use OPENAI_API_KEY",
          "vars": [{"name": "OPENAI_API_KEY"}]}]
TERMINAL = {"type": "terminal", "id": "tui", "name": "Log in", "args": ["--login"], "env": {"LOGIN": "1"}}


class Process:
    def __init__(self, env):
        self.env = env

    def stderr_tail(self, lines=None):
        return "booting\nready"


def client(methods, env=None, auth_method=None):
    return SimpleNamespace(auth_methods=methods, process=Process(env or {}), provider=Provider(
        "codex", ("codex-acp",), auth_method=auth_method), identity={}, login_name="codex", authenticated=None)


def test_methods_are_normalised_by_type_with_their_variables_args_and_env():
    offered = auth.methods(client([*CODEX, TERMINAL, "junk", {"name": "no id"},
                                   {"type": "env_var", "id": "old", "name": "Old", "varName": "OLD_KEY"}]))
    assert [(m["id"], m["type"]) for m in offered] == [("chatgpt", "agent"), ("codex-api-key", "env_var"),
                                                       ("openai-api-key", "env_var"), ("tui", "terminal"),
                                                       ("old", "env_var")]
    assert offered[2]["vars"] == ["OPENAI_API_KEY"] and offered[4]["vars"] == ["OLD_KEY"]
    assert offered[3]["args"] == ["--login"] and offered[3]["env"] == {"LOGIN": "1"}
    assert auth.variables({"vars": [{"name": "A"}, {"name": "B", "optional": True}]}) == ["A"]


@pytest.mark.parametrize("env,chosen", [
    ({"OPENAI_API_KEY": "sk-1"}, "openai-api-key"),
    ({"OPENAI_API_KEY": "sk-1", "CODEX_API_KEY": "ck-1"}, "codex-api-key"),  # the agent's order
    ({"OPENAI_API_KEY": ""}, "chatgpt"),  # an empty variable is not set: the only agent-type method
    ({}, "chatgpt"),
])
def test_the_method_chosen_after_auth_required(env, chosen):
    assert auth.chosen(client(CODEX, env))["id"] == chosen


def test_nothing_is_chosen_among_several_agent_methods_or_only_a_terminal_one():
    assert auth.chosen(client([{"id": "a", "name": "A"}, {"id": "b", "name": "B"}])) is None
    assert auth.chosen(client([TERMINAL])) is None


def test_the_refusal_names_methods_the_try_its_reason_and_the_next_command():
    failure = auth.auth_refused(client(CODEX, {"OPENAI_API_KEY": "sk-secret-value"}), tried=auth.methods(
        client(CODEX))[2], exc=AcpError(-32603, "Internal error", "OPENAI_API_KEY is not valid: sk-secret-value"))
    error = failure.error
    assert error.code == "provider_auth_failure" and failure.failure_kind == "provider_auth_failure"
    assert "it offers: Login with ChatGPT (chatgpt): Use your ChatGPT login; Use CODEX_API_KEY" in error.message
    assert "Tried 'openai-api-key': Internal error (-32603): OPENAI_API_KEY is not valid: [redacted]" in error.message
    assert error.details["tried"] == "openai-api-key"
    assert error.details["agent_error"] == {"code": -32603, "message": "Internal error",
                                            "data": "OPENAI_API_KEY is not valid: [redacted]"}
    assert error.details["stderr_tail"] == ["booting", "ready"] and error.message.endswith("| stderr: booting / ready")
    assert error.details["next_command"] == "compozy daemon reload"  # CODEX_API_KEY is still unset
    assert "set CODEX_API_KEY in providers.codex.env of config.toml" in error.details["next_step"]


@pytest.mark.parametrize("methods,command", [
    ([TERMINAL, CODEX[0]], "compozy agent login codex --method tui"),
    ([CODEX[0]], "compozy agent login codex --method chatgpt"),
    ([], None),
])
def test_the_next_command_prefers_a_terminal_login(methods, command):
    refused = auth.auth_refused(client(methods)).error
    assert refused.details.get("next_command") == command and refused.details["tried"] is None
    assert ("it offers" in refused.message) == bool(methods)


def test_a_configured_method_the_agent_lacks_is_refused_before_anything_is_sent():
    agent = client(CODEX, auth_method="api-key")
    agent.process.call = lambda *a: pytest.fail("nothing may be sent")
    with pytest.raises(BindFailure) as refused:
        auth.before_opening(agent)
    assert "sets auth_method = 'api-key', which the agent does not offer" in refused.value.error.message


def test_a_configured_terminal_method_is_left_to_agent_login():
    agent = client([TERMINAL], auth_method="tui")
    agent.process.call = lambda *a: pytest.fail("a terminal method is never authenticated")
    auth.before_opening(agent)
    assert agent.authenticated is None
