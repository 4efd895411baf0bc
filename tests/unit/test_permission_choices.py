"""The options of a permission request: read from the agent as offered, and chosen only among them."""

import pytest

from compozy.acp.requests import offered_options
from compozy.errors import CompozyError
from compozy.session.turns.choices import ALLOWING, REJECTING, chosen, decision_of, first_of_kinds, outcome
from compozy.validate import invalid, one_of, not_both, together

OFFERED = [{"option_id": "no", "name": "No", "kind": "reject_once"},
           {"option_id": "yes", "name": "Yes", "kind": "allow_once"},
           {"option_id": "plan", "kind": "switch_mode"},
           {"option_id": "again", "name": "Yes again", "kind": "allow_once"}]


def test_the_agents_options_are_kept_in_its_order_with_unknown_kinds_and_missing_names():
    raw = [{"optionId": "no", "name": "No", "kind": "reject_once"}, {"optionId": "plan", "kind": "switch_mode"},
           {"optionId": "bare"}, {"optionId": "odd", "name": 7, "kind": None},
           {"name": "no ID"}, {"optionId": 3, "name": "numeric ID"}, "not an object"]
    assert offered_options(raw) == [{"option_id": "no", "name": "No", "kind": "reject_once"},
                                    {"option_id": "plan", "kind": "switch_mode"},
                                    {"option_id": "bare"}, {"option_id": "odd"}]
    assert offered_options(None) == [] and offered_options({"optionId": "x"}) == []


def test_a_policy_takes_the_first_offered_option_of_the_first_kind_it_prefers():
    assert first_of_kinds(OFFERED, ALLOWING)["option_id"] == "yes"
    assert first_of_kinds(OFFERED, REJECTING)["option_id"] == "no"
    always = [{"option_id": "a", "kind": "allow_always"}, {"option_id": "o", "kind": "allow_once"}]
    assert first_of_kinds(always, ALLOWING)["option_id"] == "o"
    assert first_of_kinds(always[:1], ALLOWING)["option_id"] == "a"
    assert first_of_kinds(always, REJECTING) is None and first_of_kinds([], ALLOWING) is None


def test_the_decision_an_answer_records():
    assert decision_of(OFFERED[0]) == "reject-once" and decision_of(OFFERED[1]) == "allow-once"
    assert decision_of(OFFERED[2]) == "selected" and decision_of({"option_id": "x"}) == "selected"
    assert decision_of(None) == "cancelled"
    assert outcome(OFFERED[2]) == {"decision": "selected", "option": {"option_id": "plan", "kind": "switch_mode"}}
    assert outcome(None) == {"decision": "cancelled"}


def test_a_person_chooses_by_id_or_by_the_first_option_of_a_decisions_kind():
    assert chosen(OFFERED, option_id="plan") is OFFERED[2]
    assert chosen(OFFERED, decision="allow-once") is OFFERED[1]
    assert chosen(OFFERED, decision="reject-once") is OFFERED[0]


@pytest.mark.parametrize("fields, code", [
    ({"option_id": "allow-once"}, "permission_option_not_offered"),
    ({"option_id": "YES"}, "permission_option_not_offered"),  # IDs are exact
    ({"decision": "allow-always"}, "permission_option_unavailable"),
    ({"decision": "reject-always"}, "permission_option_unavailable"),
])
def test_anything_not_offered_is_refused_with_the_offered_options(fields, code):
    with pytest.raises(CompozyError) as refused:
        chosen(OFFERED, **fields)
    assert refused.value.code == code and refused.value.details["options"] == OFFERED
    assert "offered: no (No, reject_once); yes (Yes, allow_once); plan (switch_mode); again" in refused.value.message


@pytest.mark.parametrize("rule, body, refused", [
    (one_of("a", "b"), {"a": 1}, False), (one_of("a", "b"), {}, True), (one_of("a", "b"), {"a": 1, "b": 2}, True),
    (together("a", "b"), {}, False), (together("a", "b"), {"a": 1, "b": 2}, False), (together("a", "b"), {"b": 2}, True),
    (not_both("a", "b"), {"a": 1}, False), (not_both("a", "b"), {"a": 1, "b": 2}, True),
])
def test_a_rule_across_fields_checks_a_body(rule, body, refused):
    if not refused:
        rule.check(body)
        return
    with pytest.raises(CompozyError) as error:
        rule.check(body)
    assert error.value.code == invalid("x").code and error.value.details["fields"] == ["a", "b"]
