"""Unit tests for compozy.launch_aliases: the config shape, its problems, and which alias a runtime resolves to."""

import pytest

from compozy.config import from_document
from compozy.launch_aliases import resolve
from tests.unit.test_config import assert_problem

CURSOR = {"providers": {"cursor": {"command": ["cursor-agent", "acp"], "launch_aliases": [
    {"match": {"model": "grok-4.6", "speed": "fast"}, "args": ["--model", "grok-4.6-fast"]},
    {"match": {"model": "grok-4.6"}, "args": ["--model", "grok-4.6"]},
    {"match": {"model": "claude-opus-5", "options": {"thinking": True}}, "args": ["--model", "opus-5-thinking"]},
]}}}


def cursor():
    return from_document(CURSOR).provider("cursor")


@pytest.mark.parametrize("target, args", [
    ({"model": "grok-4.6", "speed": "fast"}, ("--model", "grok-4.6-fast")),
    ({"model": "grok-4.6", "speed": "normal"}, ("--model", "grok-4.6")),
    ({"model": "grok-4.6"}, ("--model", "grok-4.6")),
    ({"model": "claude-opus-5", "acp_options": [{"id": "thinking", "bool_value": True}]}, ("--model", "opus-5-thinking")),
    ({"model": "claude-opus-5", "acp_options": [{"id": "thinking", "bool_value": False}]}, None),
    ({"model": "claude-opus-5", "acp_options": [{"id": "thinking", "value_id": "true"}]}, None),
    ({"model": "claude-opus-5"}, None),
    ({}, None),
])
def test_the_first_matching_alias_wins(target, args):
    alias = resolve(cursor(), {"provider": "cursor", **target})
    assert (alias.args if alias else None) == args


def test_live_part_drops_only_the_baked_choices():
    alias = resolve(cursor(), {"model": "claude-opus-5", "acp_options": [{"id": "thinking", "bool_value": True}]})
    target = {"provider": "cursor", "model": "claude-opus-5", "speed": "fast",
              "acp_options": [{"id": "thinking", "bool_value": True}, {"id": "mode", "value_id": "ask"}]}
    assert alias.live_part(target) == {"provider": "cursor", "speed": "fast",
                                       "acp_options": [{"id": "mode", "value_id": "ask"}]}
    assert alias.logical_fields() == {"model": "claude-opus-5"}


def test_providers_without_aliases_resolve_to_none():
    assert resolve(from_document({}).provider("reference"), {"model": "echo-1"}) is None


def aliased(*entries):
    return {"providers": {"p": {"command": ["a"], "launch_aliases": list(entries)}}}


@pytest.mark.parametrize("document, key, words", [
    ({"providers": {"p": {"command": ["a"], "launch_aliases": {"match": {}}}}}, "providers.p.launch_aliases",
     "expected a list"),
    (aliased("x"), "providers.p.launch_aliases[1]", "expected { match"),
    (aliased({"match": {"model": "m"}, "args": ["-m"], "when": 1}), "providers.p.launch_aliases[1].when",
     "unknown key"),
    (aliased({"match": {"model": "m"}}), "providers.p.launch_aliases[1].args", "non-empty list of strings"),
    (aliased({"match": {"model": "m"}, "args": []}), "providers.p.launch_aliases[1].args", "non-empty list"),
    (aliased({"match": {"model": "m"}, "args": [3]}), "providers.p.launch_aliases[1].args", "non-empty list"),
    (aliased({"args": ["-m"]}), "providers.p.launch_aliases[1].match", "expected a table"),
    (aliased({"match": {}, "args": ["-m"]}), "providers.p.launch_aliases[1].match", "expected a table"),
    (aliased({"match": {"modle": "m"}, "args": ["-m"]}), "providers.p.launch_aliases[1].match.modle", "unknown key"),
    (aliased({"match": {"model": 4}, "args": ["-m"]}), "providers.p.launch_aliases[1].match.model",
     "non-empty string"),
    (aliased({"match": {"options": {"thinking": 1}}, "args": ["-m"]}),
     "providers.p.launch_aliases[1].match.options", "string or true/false"),
    (aliased({"match": {"model": "m"}, "args": ["-m"]}, {"match": {"speed": "fast"}, "args": "--fast"}),
     "providers.p.launch_aliases[2].args", "non-empty list"),
])
def test_bad_launch_aliases_are_named(document, key, words):
    assert_problem(document, key, words)
