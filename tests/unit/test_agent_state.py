"""What an agent says of its own state (config_option_update, current_mode_update, available_commands_update)
and its session modes chosen as the runtime option `mode`, against a recording stand-in of the agent."""

import pytest

from compozy.acp.client import AgentClient, BindFailure, configure, needs_configuration
from compozy.acp.options import take_update
from compozy.config import Provider
from tests.unit.test_runtime_options import RecordingAgent

MODES = {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code",
                                                                                   "description": "Writes code"}]}


def runtime(refuse=(), options=()):
    client = AgentClient(Provider("p", ("true",)), RecordingAgent(refuse))
    client.acp_session_id, client.config_options = "s1", [dict(o) for o in options]
    client.modes = {**MODES, "availableModes": list(MODES["availableModes"])}
    return client


def test_announcements_keep_the_clients_view_current():
    client = runtime()
    take_update(client, {"sessionUpdate": "current_mode_update", "currentModeId": "code"})
    take_update(client, {"sessionUpdate": "available_commands_update", "availableCommands": [
        {"name": "web", "description": "Search the web", "input": {"hint": "query"}}, {"name": 5}, "junk"]})
    take_update(client, {"sessionUpdate": "config_option_update", "configOptions": [{"id": "model"}, "junk"]})
    assert client.mode_state() == {"current": "code", "available": [
        {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code", "description": "Writes code"}]}
    assert client.available_commands == [{"name": "web", "description": "Search the web", "hint": "query"}]
    assert client.config_options == [{"id": "model"}]
    assert AgentClient(Provider("p", ("true",))).mode_state() is None


def test_a_mode_is_chosen_like_an_option_and_only_when_it_differs():
    client = runtime()
    assert needs_configuration(client, {"acp_options": [{"id": "mode", "value_id": "code"}]})
    assert not needs_configuration(client, {"acp_options": [{"id": "mode", "value_id": "ask"}]})
    configure(client, {"acp_options": [{"id": "mode", "value_id": "code"}]})
    assert client.process.calls == [("session/set_mode", {"sessionId": "s1", "modeId": "code"})]
    assert client.mode_state()["current"] == "code"
    with pytest.raises(BindFailure) as refused:
        configure(client, {"acp_options": [{"id": "mode", "value_id": "fly"}]})
    assert refused.value.error.code == "runtime_option_unsupported"
    assert "'fly' is not offered" in refused.value.error.message


def test_a_later_refusal_rolls_the_mode_back():
    options = [{"id": "speed", "category": "_speed", "type": "select", "currentValue": "normal",
                "options": [{"value": "normal"}, {"value": "fast"}]}]
    client = runtime(refuse={"fast"}, options=options)
    with pytest.raises(BindFailure):
        configure(client, {"speed": "fast", "acp_options": [{"id": "mode", "value_id": "code"}]})
    assert client.process.calls[0][0] == "session/set_config_option"  # refused: nothing changed yet
    client = runtime(refuse={"fast"}, options=options)
    with pytest.raises(BindFailure):
        configure(client, {"acp_options": [{"id": "mode", "value_id": "code"},
                                           {"id": "speed", "value_id": "fast"}]})
    assert [(m, p.get("modeId")) for m, p in client.process.calls if m == "session/set_mode"] == [
        ("session/set_mode", "code"), ("session/set_mode", "ask")]
    assert client.mode_state()["current"] == "ask"
