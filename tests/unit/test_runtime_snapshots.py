"""Runtime snapshots: validation, layering and fallback routes."""

import pytest

from compozy.config import from_document
from compozy.errors import CompozyError
from compozy.session.records.snapshots import check_snapshot, layer, routes_for


def test_a_snapshot_takes_known_fields_and_typed_options():
    snapshot = check_snapshot({"provider": "p", "model": "m", "acp_options": [
        {"id": "thinking", "bool_value": True}, {"id": "mode", "value_id": "code"}]})
    assert snapshot["acp_options"][0] == {"id": "thinking", "bool_value": True}


@pytest.mark.parametrize("body", [
    {"model": 3}, {"colour": "red"}, {"acp_options": [{"id": "x"}]},
    {"acp_options": [{"id": "x", "value_id": "a", "bool_value": True}]}, {"acp_options": "thinking"},
    {"acp_options": [{"id": "x", "bool_value": "yes"}]},
])
def test_bad_snapshots_are_invalid_requests(body):
    with pytest.raises(CompozyError) as error:
        check_snapshot(body)
    assert error.value.code == "invalid_request"


def test_each_layer_replaces_only_what_it_sets():
    merged = layer({"provider": "a", "model": "m1", "speed": "normal"}, {"model": "m2"},
                   {"speed": "fast", "acp_options": [{"id": "t", "bool_value": True}]},
                   {"acp_options": [{"id": "t", "bool_value": False}]})
    assert merged == {"provider": "a", "model": "m2", "speed": "fast", "acp_options": [{"id": "t", "bool_value": False}]}


def test_the_fallback_chain_applies_only_when_nothing_names_a_provider():
    config = from_document({"providers": {"x": {"command": ["true"]}, "y": {"command": ["true"]}},
                            "agents": {"g": {"provider": "x", "fallback_chain": [
                                {"provider": "x", "model": "a"}, {"provider": "y", "model": "b"}]}}})
    agent = config.agent("g")
    assert [(n, t["provider"], t["model"]) for n, t in routes_for(agent, None, {})] == [(1, "x", "a"), (2, "y", "b")]
    assert routes_for(agent, None, {"model": "c"})[1][1]["model"] == "c"
    assert routes_for(agent, {"provider": "y"}, {}) == [(None, {"provider": "y"})]
