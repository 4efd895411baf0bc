"""Mapping a runtime snapshot onto an agent's advertised options (config options, modes, legacy models).

The agent side is a recording stand-in with the shapes real agents answer (acp.md sections 2.3, 2.6).
"""

import pytest

from compozy.acp.driver import AcpError
from compozy.config import Provider
from compozy.acp.client import AgentClient, BindFailure, configure, needs_configuration

OPTIONS = [
    {"id": "model", "category": "model", "type": "select", "currentValue": "m1",
     "options": [{"value": "m1", "name": "M1"}, {"group": "big", "name": "Big", "options": [{"value": "m2", "name": "M2"}]}]},
    {"id": "effort", "category": "thought_level", "type": "select", "currentValue": "low",
     "options": [{"value": "low"}, {"value": "high"}]},
    {"id": "thinking", "type": "boolean", "currentValue": False},
]


class RecordingAgent:
    def __init__(self, refuse=()):
        self.calls, self.refuse = [], set(refuse)

    def call(self, method, params, timeout):
        self.calls.append((method, params))
        if params.get("value") in self.refuse or params.get("modelId") in self.refuse:
            raise AcpError(-32602, "refused")
        return {} if method != "session/set_config_option" else None


def _runtime(refuse=(), options=OPTIONS, modes=None, models=None):
    runtime = AgentClient(Provider("p", ("true",)), RecordingAgent(refuse))
    runtime.acp_session_id = "s1"
    runtime.config_options = [dict(o) for o in options]
    runtime.modes, runtime.legacy_models = modes, models
    return runtime


def test_fields_map_by_id_or_category_including_grouped_choices():
    runtime = _runtime()
    configure(runtime, {"model": "m2", "reasoning_effort": "high", "acp_options": [{"id": "thinking", "bool_value": True}]})
    sent = [(p["configId"], p["value"], p.get("type")) for _, p in runtime.process.calls]
    assert sent == [("model", "m2", None), ("effort", "high", None), ("thinking", True, "boolean")]
    assert runtime.effective["model"] == "m2" and not needs_configuration(runtime, {"model": "m2"})


def test_unknown_values_name_the_problem_with_stable_codes():
    with pytest.raises(BindFailure) as failure:
        configure(_runtime(), {"model": "nope"})
    assert failure.value.error.code == "model_unavailable"
    with pytest.raises(BindFailure) as failure:
        configure(_runtime(), {"speed": "fast"})
    assert failure.value.error.code == "runtime_option_unsupported"


def test_a_refusal_rolls_back_what_was_already_changed():
    runtime = _runtime(refuse={"high"})
    with pytest.raises(BindFailure):
        configure(runtime, {"model": "m2", "reasoning_effort": "high"})
    assert runtime.process.calls[-1][1] == {"sessionId": "s1", "configId": "model", "value": "m1"}


def test_modes_and_legacy_models_are_used_when_no_config_option_exists():
    runtime = _runtime(options=[], modes={"currentModeId": "ask", "availableModes": [{"id": "ask"}, {"id": "code"}]},
                       models={"currentModelId": "a", "availableModels": [{"modelId": "a"}, {"modelId": "b"}]})
    configure(runtime, {"model": "b", "acp_options": [{"id": "mode", "value_id": "code"}]})
    assert [(m, p.get("modelId") or p.get("modeId")) for m, p in runtime.process.calls] == [
        ("session/set_model", "b"), ("session/set_mode", "code")]
