"""A question's free form as `session attach` fills it: each typed line checked against its field's type,
defaults taken by an empty line, what a form that is odd (no fields, a bad schema) does."""

from compozy.cli.questions import Form, question_prompt, takes_form

SCHEMA = {"type": "object", "required": ["size", "colour"],
          "properties": {"size": {"type": "integer"}, "colour": {"type": "string", "enum": ["red", "blue"]},
                         "ratio": {"type": "number", "default": 0.5}, "ship": {"type": "boolean"}}}


def fill(form, *typed):
    return [form.take(line) for line in typed]


def test_each_field_takes_only_a_value_of_its_type_and_an_empty_line_its_default_or_nothing():
    form = Form(SCHEMA)
    assert form.ask() == "  size (a whole number): "
    assert fill(form, "3.5", "", "12") == ["type a whole number", "this field needs a value", None]
    assert form.ask() == "  colour (one of red, blue): "
    assert fill(form, "green", "BLUE") == ["type one of red, blue", None]
    assert form.ask() == "  ratio (a number; empty for 0.5): "
    assert fill(form, "nan", "inf", "") == ["type a number", "type a number", None]
    assert form.ask() == "  ship (yes/no; empty to leave out): "
    assert fill(form, "perhaps", "") == ["type yes or no", None]
    assert form.done and form.values == {"size": 12, "colour": "blue", "ratio": 0.5}
    form.restart()
    assert fill(form, "1", "red", "2", "yes") == [None] * 4 and form.values == \
        {"size": 1, "colour": "red", "ratio": 2, "ship": True}


def test_a_form_of_no_fields_or_a_broken_schema_is_done_at_once():
    for schema in (None, {}, {"properties": []}, {"properties": {}, "required": "size"}):
        assert Form(schema).done and Form(schema).values == {}


def test_a_free_form_is_told_apart_from_a_choice():
    free = {"action": "question", "question": {"message": "What name?"},
            "options": [{"option_id": "accept", "name": "Answer", "kind": "accept"},
                        {"option_id": "decline", "name": "Decline", "kind": "decline"}]}
    choice = {**free, "options": [{"option_id": "yes", "name": "Yes", "kind": "accept"}, free["options"][1]]}
    assert takes_form(free) and not takes_form(choice) and not takes_form({**free, "action": "edit"})
    assert question_prompt(choice) == "\n[question] What name?: 1) Yes  2) Decline  (type a number or a name)"
    assert "answer each field below" in question_prompt(free)


def test_an_agents_malformed_form_is_kept_to_what_is_a_form_before_anyone_answers_it():
    from compozy.acp.requests import form_schema
    odd = {"type": "object", "properties": {"a": "string", "b": {"type": "integer"}, "c": None},
           "required": ["a", "b", 7]}
    assert form_schema(odd) == {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}
    assert form_schema({"properties": ["x"], "required": "x"}) == {"properties": {}, "required": []}


def test_an_answer_to_a_form_with_a_field_that_is_no_object_is_refused_not_a_failure():
    from types import SimpleNamespace

    import pytest

    from compozy.errors import CompozyError
    from compozy.session.turns.permissions import answered
    pending = SimpleNamespace(kind="question", reply=SimpleNamespace(schema={"properties": {"a": "string"}}))
    accept = {"option_id": "accept", "kind": "accept"}
    assert answered(pending, accept, {"a": "x"})["content"] == {"a": "x"}
    with pytest.raises(CompozyError) as refused:
        answered(pending, accept, {"z": "x"})
    assert refused.value.code == "invalid_request"
