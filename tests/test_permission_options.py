"""Approving with the agent's own options against a real daemon and the reference agent: what a refusal
hands back to fix the request, what the CLI prints, and two people answering the same request at once."""

import threading

import pexpect
import pytest

from compozy.cli.client import Client
from compozy.errors import CompozyError
from tests.harness.api import events, spath, wait_for
from tests.harness.cli import run_cli, spawn_cli
from tests.harness.daemon import DaemonProcess

OFFER = "[permission edit go/allow_once/Go ahead | never/reject_always/Never]"


@pytest.fixture
def held(home, workspace):
    """(daemon, api, session, request_id): an edit held for a person, offering the agent's two options."""
    (home / "config.toml").write_text('[permissions]\nmode = "approve-reads"\n')
    daemon = DaemonProcess(home).start()
    api = Client(daemon.socket_url, timeout=30)
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    turn_id = api.call("POST", spath(session, "prompt"), {"message": f"{OFFER} go"})[1]["prompt"]["turn_id"]
    pending = wait_for(lambda: events(api, session, turn_id=turn_id, type="permission"), what="the held request")
    yield daemon, api, session, pending[0]["content"]["request_id"]
    daemon.stop()


def refusal(api, session, body):
    with pytest.raises(CompozyError) as refused:
        api.call("POST", spath(session, "approve"), body)
    return refused.value


def test_a_refusal_hands_back_the_offered_options_and_leaves_the_request_pending(held):
    daemon, api, session, request_id = held
    offered = [{"option_id": "go", "name": "Go ahead", "kind": "allow_once"},
               {"option_id": "never", "name": "Never", "kind": "reject_always"}]
    unavailable = refusal(api, session, {"request_id": request_id, "decision": "allow-always"})
    assert (unavailable.code, unavailable.status) == ("permission_option_unavailable", 409)
    assert unavailable.details == {"decision": "allow-always", "options": offered}
    unknown = refusal(api, session, {"request_id": request_id, "option_id": "allow-once"})
    assert (unknown.code, unknown.status) == ("permission_option_not_offered", 409)
    assert unknown.details == {"option_id": "allow-once", "options": offered}
    inspected = api.call("GET", spath(session, "inspect"))[1]
    assert [(i["request_id"], i["status"]) for i in inspected["pending_interactions"]] == [(request_id, "pending")]
    # The CLI says what was offered too, and prints the option chosen as the agent named it.
    cli = run_cli(daemon.home, "session", "approve", session["id"], request_id, "--decision", "reject-once")
    assert cli.returncode == 1
    assert "Error: permission_option_unavailable: the agent offered no reject-once option; " \
           "offered: go (Go ahead, allow_once); never (Never, reject_always)" in cli.stderr
    cli = run_cli(daemon.home, "session", "approve", session["id"], request_id, "--option", "never")
    assert (cli.returncode, cli.stdout) == (0, f"{request_id}: Never (reject-always)\n")
    wait_for(lambda: events(api, session, type="done"), what="the end of the turn")
    texts = [e["content"]["text"] for e in events(api, session, type="agent_message")]
    assert texts == ["permission denied: never ", "echo: go"]


def test_two_answers_at_once_one_reaches_the_agent(held):
    _, api, session, request_id = held
    outcomes, start = [], threading.Barrier(2)

    def answer(option_id):
        start.wait()
        try:
            api.call("POST", spath(session, "approve"), {"request_id": request_id, "option_id": option_id})
            outcomes.append(option_id)
        except CompozyError as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=answer, args=(option,)) for option in ("go", "never")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    winner = next(o for o in outcomes if o in ("go", "never"))
    assert sorted(outcomes) == sorted([winner, "permission_request_not_found"])
    wait_for(lambda: events(api, session, type="done"), what="the end of the turn")
    answered = [e["content"] for e in events(api, session, type="permission") if e["content"].get("decision")]
    assert [a["option"]["option_id"] for a in answered] == [winner]
    texts = [e["content"]["text"] for e in events(api, session, type="agent_message")]
    assert texts[0] == f"permission {'granted' if winner == 'go' else 'denied'}: {winner} "


def test_hostile_option_names_reach_a_terminal_harmless(home, workspace):
    (home / "config.toml").write_text('[permissions]\nmode = "approve-all"\n')
    daemon = DaemonProcess(home).start()
    try:
        sid = run_cli(home, "session", "new", "--cwd", str(workspace), "-q").stdout.strip()
        run_cli(home, "session", "prompt", sid, "[permission edit ok/allow_once/Fine\x1b\u202eenif] go")
        shown = run_cli(home, "session", "events", sid, "--type", "permission").stdout
        assert "\x1b" not in shown and "\u202e" not in shown and "Fine\\x1b\\u202eenif (allow-once, mode approve-all)" in shown
    finally:
        daemon.stop()


def test_a_prompt_followed_on_the_cli_names_the_options_to_approve_with(home, workspace):
    (home / "config.toml").write_text('[permissions]\nmode = "approve-reads"\n')
    daemon = DaemonProcess(home).start()
    try:
        sid = run_cli(home, "session", "new", "--cwd", str(workspace), "-q").stdout.strip()
        child = spawn_cli(home, "session", "prompt", sid, f"{OFFER} go", extra_env={"NO_COLOR": "1"})
        child.expect(r"\[permission pending: (perm_\w+) Reference edit; options: go \(Go ahead\), never \(Never\)\]")
        approved = run_cli(home, "session", "approve", sid, child.match.group(1), "--option", "go", "-o", "json")
        assert approved.returncode == 0 and '"option_id": "go"' in approved.stdout
        child.expect("permission granted: go echo: go")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    finally:
        daemon.stop()
