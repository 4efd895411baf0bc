"""`compozy inbox answer` on an agent's question, against the real daemon and the reference agent: a free
form answered with `--content JSON` (the form's fields), and what is refused, the item left open."""

import json

from tests.harness.cli import cli_json, run_cli
from tests.test_daemon import wait_for


def open_questions(home):
    return cli_json(home, "inbox", "--kind", "question")["items"]


def test_inbox_answer_answers_a_free_form_question_with_its_fields_as_content(daemon, workspace):
    home = daemon.home
    sid = cli_json(home, "session", "new", "--cwd", str(workspace), "--name", "asker")["session"]["id"]
    assert run_cli(home, "session", "prompt", sid, "[ask - What name?] go", "--detach").returncode == 0
    [item] = wait_for(lambda: open_questions(home), what="the question's inbox item")
    assert [a["id"] for a in item["actions"]] == ["accept", "decline"]
    assert item["actions"][0]["content"]["required"] == ["answer"]  # the form the accept action takes
    listed = run_cli(home, "inbox", extra_env={"NO_COLOR": "1"})
    assert "asker: the agent asks: What name?  [accept | decline]" in listed.stdout
    # Refused, nothing sent: content that is no JSON object (a usage error), none for the form, content for
    # an action that takes none, content that does not fit the form.
    for content, words in (('["Ada"]', 'a JSON object, e.g. {"answer": "yes"}'), ('{"answer":', "not JSON")):
        refused = run_cli(home, "inbox", "answer", item["id"], "accept", "--content", content)
        assert refused.returncode == 2 and f"Invalid value for '--content': {words}" in refused.stderr
    refusals = ((("accept",), "this question's accept option takes content: the form's fields"),
                (("decline", "--content", '{"answer": "Ada"}'), "takes no content"),
                (("accept", "--content", '{"answer": 7}'), "the answer does not fit the form"))
    for args, words in refusals:
        refused = run_cli(home, "inbox", "answer", item["id"], *args)
        assert refused.returncode == 1 and "Error: invalid_request:" in refused.stderr and words in refused.stderr
    assert [i["id"] for i in open_questions(home)] == [item["id"]]
    answered = run_cli(home, "inbox", "answer", item["id"], "accept", "--content", '{"answer": "Ada"}', "-o", "json")
    assert answered.returncode == 0, answered.stderr
    document = json.loads(answered.stdout)
    assert document["action"] == "accept"
    assert document["result"]["permission"]["option"]["content"] == {"answer": "Ada"}
    wait_for(lambda: open_questions(home) == [], what="the item to resolve")
    def agent_text():
        events = cli_json(home, "session", "events", sid, "--type", "agent_message")["events"]
        return "".join(e["content"]["text"] for e in events)
    assert wait_for(lambda: "echo: go" in agent_text(), what="the turn to end") and agent_text() == \
        "answered: Ada echo: go"
