"""`session attach` answers an agent's question (ACP form elicitation), driven through a pseudo-terminal
(pexpect) against a real daemon and the reference agent: a choice by number or name, a free form field by
field (text, numbers, yes/no, defaults), /decline; text typed meanwhile is never sent as a prompt."""

import json

from tests.harness.cli import cli_json, run_cli
from tests.test_cli_attach import attach, create, detach, events_of


def agent_text(home, sid):
    return "".join(e["content"]["text"] for e in events_of(home, sid, "agent_message"))


def test_attach_answers_a_choice_by_number_and_a_free_form_field_by_field(daemon, workspace):
    home = daemon.home
    sid = create(home, workspace)
    child = attach(home, sid)
    child.sendline("[ask redis|memcached Which backend?] first")
    child.expect(r"\[question\] Which backend\?: 1\) redis  2\) memcached  3\) Decline  \(type a number or a name\)")
    child.sendline("postgres")  # none of the choices: asked again, never a prompt
    child.expect("'postgres' is none of the options; type 1-3 or an option's name")
    child.expect(r"\[question\] Which backend\?: 1\) redis")
    child.sendline("2")
    child.expect(r"\[permission perm_\w+: memcached \(selected, user\)\]")
    child.expect("answered: memcached echo: first")
    # A free form: each field in turn; an empty line for a required field is asked again.
    child.sendline("[ask - What name?] second")
    child.expect(r"\[question\] What name\?  \(answer each field below; /decline declines\)")
    child.expect(r"Answer \(text\): ")
    child.sendline("")
    child.expect("this field needs a value")
    child.expect(r"Answer \(text\): ")
    child.sendline("Ada Lovelace")
    child.expect(r'\[permission perm_\w+: Answer \{"answer": "Ada Lovelace"\} \(selected, user\)\]')
    child.expect("answered: Ada Lovelace echo: second")
    # Several fields of several types: a number, yes/no, defaults taken by an empty line, an optional
    # field left out; a value of the wrong type is asked again.
    child.sendline("[ask-form name:string,count:integer=3,ship:boolean=true,ratio:number,note?:string third] third")
    child.expect(r"\[question\] third  \(answer each")
    child.expect(r"Name \(text\): ")
    child.sendline("Ada")
    child.expect(r"Count \(a whole number; empty for 3\): ")
    child.sendline("lots")
    child.expect("type a whole number")
    child.expect(r"Count \(a whole number; empty for 3\): ")
    child.sendline("")
    child.expect(r"Ship \(yes/no; empty for yes\): ")
    child.sendline("maybe")
    child.expect("type yes or no")
    child.sendline("n")
    child.expect(r"Ratio \(a number\): ")
    child.sendline("0.5")
    child.expect(r"Note \(text; empty to leave out\): ")
    child.sendline("")
    child.expect(r'answered: \{"count": 3, "name": "Ada", "ratio": 0.5, "ship": false\} echo: third')
    # /decline declines a pending question.
    child.sendline("[ask - Why?] fourth")
    child.expect(r"Answer \(text\): ")
    child.sendline("/decline")
    child.expect(r"\[permission perm_\w+: Decline \(selected, user\)\]")
    child.expect("ask decline echo: fourth")
    child.sendline("/decline")
    child.expect("no question is pending")
    assert detach(child) == 0
    prompts = [e["content"]["text"] for e in events_of(home, sid, "user_message")]
    assert [p.rsplit("] ", 1)[1] for p in prompts] == ["first", "second", "third", "fourth"]
    answers = [e["content"]["option"] for e in events_of(home, sid, "permission") if e["content"].get("decision")]
    assert [a.get("content") for a in answers] == [
        None, {"answer": "Ada Lovelace"}, {"name": "Ada", "count": 3, "ship": False, "ratio": 0.5}, None]
    assert cli_json(home, "inbox", "--kind", "question")["items"] == []
    assert json.dumps(answers[2]["content"], sort_keys=True) in agent_text(home, sid)


def test_a_question_answered_elsewhere_ends_the_form_in_attach(daemon, workspace):
    home = daemon.home
    sid = create(home, workspace)
    child = attach(home, sid)
    child.sendline("[ask - What name?] first")
    child.expect(r"Answer \(text\): ")
    [item] = cli_json(home, "inbox", "--kind", "question")["items"]
    answered = run_cli(home, "inbox", "answer", item["id"], "accept", "--content", '{"answer": "Grace"}')
    assert answered.returncode == 0, answered.stderr
    child.expect(r'\[permission perm_\w+: Answer \{"answer": "Grace"\} \(selected, user\)\]')
    child.expect("answered: Grace echo: first")
    child.sendline("afterwards")  # no form pending: a prompt again
    child.expect("echo: afterwards")
    assert detach(child) == 0
