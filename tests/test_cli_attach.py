"""`session attach`, `session events --follow` and Ctrl-C in `session prompt`, driven through a
pseudo-terminal (pexpect) against a real daemon and the reference agent."""

import re
import signal

import pexpect
import pytest

from tests.harness.cli import cli_json, interrupt, on_terminal, run_cli, spawn_cli
from tests.test_daemon import wait_for


@pytest.fixture
def approve_reads(home):
    (home / "config.toml").write_text('[permissions]\nmode = "approve-reads"\n')


def create(home, workspace):
    return cli_json(home, "session", "new", "--cwd", str(workspace))["session"]["id"]


def open_gate(workspace, name):
    gates = workspace / ".compozy-gates"
    gates.mkdir(exist_ok=True)
    (gates / name).touch()


def events_of(home, sid, kind):
    return cli_json(home, "session", "events", sid, "--type", kind)["events"]


def attach(home, sid, *args):
    child = spawn_cli(home, "session", "attach", sid, *args, extra_env={"NO_COLOR": "1"})
    child.expect("Ctrl-D to detach")
    return child


def detach(child):
    child.sendeof()
    child.expect(r"detached; sess_\w+ goes on")
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_attach_shows_recent_events_prompts_and_detaches_leaving_the_turn_running(approve_reads, daemon, workspace):
    sid = create(daemon.home, workspace)
    assert run_cli(daemon.home, "session", "prompt", sid, "before attaching").returncode == 0
    child = attach(daemon.home, sid[5:20])  # a prefix, without sess_
    assert "echo: before attaching" in child.before
    child.sendline("hello there")
    child.expect("echo: hello there")
    # A permission request is answered inline, by the number of the option the agent offered.
    child.sendline("[permission edit] go")
    child.expect(r"\[permission\] .*1\) Allow.*type a number or a name")
    child.sendline("1")
    child.expect("permission granted: allow-once")
    child.expect("echo: go")
    # A prompt typed from elsewhere shows up, as do its answers.
    assert run_cli(daemon.home, "session", "prompt", sid, "from elsewhere", "--detach").returncode == 0
    child.expect("> from elsewhere")
    child.expect("echo: from elsewhere")
    # Ctrl-D detaches mid-turn; the turn goes on without the terminal.
    child.sendline("[hold g1] long one")
    child.expect("holding g1")
    assert detach(child) == 0
    open_gate(workspace, "g1")
    wait_for(lambda: len(events_of(daemon.home, sid, "done")) == 5, what="the held turn to end after detaching")
    assert events_of(daemon.home, sid, "done")[-1]["content"]["stop_reason"] == "end_turn"


def test_attach_offers_the_agents_own_options_and_asks_again_for_anything_else(approve_reads, daemon, workspace):
    sid = create(daemon.home, workspace)
    child = attach(daemon.home, sid)
    child.sendline("[permission edit go/allow_once/Go ahead | never/reject_always/Never | plan/switch_mode] first")
    child.expect(r"\[permission\] Reference edit: 1\) Go ahead  2\) Never  3\) plan  \(type a number or a name\)")
    # Neither a number nor a name of an offered option: asked again, never sent to the agent as a prompt.
    for typed in ("maybe", "4", "allow once"):
        child.sendline(typed)
        child.expect(f"'{typed}' is none of the options; type 1-3 or an option's name")
        child.expect(r"\[permission\] Reference edit: 1\) Go ahead")
    child.sendline("NEVER")  # a name, whatever its letter case
    child.expect(r"\[permission perm_\w+: Never \(reject-always, user\)\]")
    child.expect("permission denied: never")
    child.expect("echo: first")
    child.sendline("[permission execute go/allow_once/Go ahead | never/reject_always/Never] second")
    child.expect(r"1\) Go ahead  2\) Never")
    child.sendline("1")
    child.expect(r"\[permission perm_\w+: Go ahead \(allow-once, user\)\]")
    child.expect("permission granted: go")
    child.expect("echo: second")
    # With nothing pending, text is a prompt again.
    child.sendline("maybe")
    child.expect("echo: maybe")
    assert detach(child) == 0
    prompts = [e["content"]["text"] for e in events_of(daemon.home, sid, "user_message")]
    assert prompts == [prompts[0], prompts[1], "maybe"] and "first" in prompts[0] and "second" in prompts[1]
    answers = [e["content"] for e in events_of(daemon.home, sid, "permission") if e["content"].get("decision")]
    assert [(a["option"]["option_id"], a["reason"]) for a in answers] == [("never", "user"), ("go", "user")]


def test_attach_busy_modes_and_slash_commands(daemon, workspace):
    sid = create(daemon.home, workspace)
    child = attach(daemon.home, sid)
    child.sendline("[hold g1] first")
    child.expect("holding g1")
    child.sendline("/queue afterwards")
    child.expect(r"queued turn turn_\w+ entry queue_\w+")
    child.sendline("/cancel")
    child.expect(r"cancelling turn turn_\w+")
    child.expect("echo: afterwards")  # the queued entry runs once the cancelled turn ends
    child.sendline("[hold g2] second")
    child.expect("holding g2")
    child.sendline("typed while busy")  # the configured busy mode: steer (by interrupting, for this agent)
    child.expect(r"interrupted the running turn: this agent cannot steer; your message runs next as turn turn_\w+")
    assert "steered" not in child.before
    child.expect("echo: typed while busy")
    child.sendline("[hold g3] third")
    child.expect("holding g3")
    child.sendline("/interrupt instead")
    child.expect(r"interrupted turn turn_\w+")
    child.expect("echo: instead")
    child.sendline("/help")
    child.expect("/interrupt TEXT")
    child.sendline("/nonsense")
    child.expect("unknown command /nonsense")
    child.sendline("/stop")
    child.expect("stopping the session")
    child.expect(r"\[session stopped")
    assert attach_ends(child, sid, "user_canceled, stop requested") == 0
    wait_for(lambda: cli_json(daemon.home, "session", "get", sid)["session"]["state"] == "stopped",
             what="the session to stop")
    ends = [e["content"]["stop_reason"] for e in events_of(daemon.home, sid, "done")]
    assert ends == ["cancelled", "end_turn", "cancelled", "end_turn", "cancelled", "end_turn"]


def attach_ends(child, sid, why):
    """The session stopped while attached: attach says why and how to restart it, then exits."""
    child.expect(re.escape(f"{sid} stopped ({why}): attach ends; a prompt starts it again"))
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


@pytest.mark.parametrize("stop", [("stop",), ("archive", "--stop")])
def test_attach_ends_saying_why_when_the_session_is_stopped_or_archived_from_elsewhere(daemon, workspace, stop):
    sid = create(daemon.home, workspace)
    child = attach(daemon.home, sid)
    child.sendline("[hold g1] working")
    child.expect("holding g1")
    assert run_cli(daemon.home, "session", *stop, sid).returncode == 0
    why = "user_canceled, stop requested" if stop == ("stop",) else "user_canceled, stopped to archive"
    assert attach_ends(child, sid, why) == 0


def test_attach_refuses_a_stopped_and_an_archived_session_with_the_pages_codes(daemon, workspace):
    sid = create(daemon.home, workspace)
    assert run_cli(daemon.home, "session", "prompt", sid, "hello").returncode == 0
    assert run_cli(daemon.home, "session", "stop", sid, "--wait").returncode == 0
    output, status = on_terminal(daemon.home, "session", "attach", sid)
    assert status == 1 and f"Error: session_not_attachable: session {sid} is stopped: attach requires a live " \
                           f"session; a prompt starts it again" in output
    assert "attached to" not in output
    assert run_cli(daemon.home, "session", "archive", sid).returncode == 0
    output, status = on_terminal(daemon.home, "session", "attach", sid)
    assert status == 1 and f"Error: session_archived: session {sid} is archived: attach requires a live session" \
        in output
    # A prompt restarts the unarchived session, and it can be attached again.
    assert run_cli(daemon.home, "session", "unarchive", sid).returncode == 0
    assert run_cli(daemon.home, "session", "prompt", sid, "again").returncode == 0
    assert detach(attach(daemon.home, sid)) == 0


def test_attach_resumes_by_sequence_after_the_daemon_restarts(daemon, workspace):
    sid = create(daemon.home, workspace)
    child = attach(daemon.home, sid)
    child.sendline("before the restart")
    child.expect("echo: before the restart")
    daemon.restart()
    child.expect(r"\[reconnected; resuming after #(\d+)\]", timeout=120)
    assert run_cli(daemon.home, "session", "prompt", sid, "after the restart").returncode == 0
    child.expect("echo: after the restart")
    child.sendline("typed after the restart")
    child.expect("echo: typed after the restart")
    assert detach(child) == 0
    assert child.logfile_read.getvalue().count("echo: after the restart") == 1


def test_events_follow_prints_new_events_across_a_restart_until_interrupted(daemon, workspace):
    sid = create(daemon.home, workspace)
    assert run_cli(daemon.home, "session", "prompt", sid, "one").returncode == 0
    child = spawn_cli(daemon.home, "session", "events", sid, "--follow", "--type", "user_message,done")
    child.expect(r"#1 .*user_message\s+one")
    child.expect(r"done\s+end_turn")
    assert run_cli(daemon.home, "session", "prompt", sid, "two").returncode == 0
    child.expect(r"user_message\s+two")
    daemon.restart()
    child.expect(r"\[reconnected", timeout=120)
    assert run_cli(daemon.home, "session", "prompt", sid, "three").returncode == 0
    child.expect(r"user_message\s+three")
    interrupt(child)
    assert child.exitstatus == 130 or child.signalstatus == signal.SIGINT
    lines = re.findall(r"user_message\s+(\w+)", child.logfile_read.getvalue())
    assert lines == ["one", "two", "three"]


def test_events_follow_json_prints_one_record_a_line(daemon, workspace):
    sid = create(daemon.home, workspace)
    child = spawn_cli(daemon.home, "session", "events", sid, "--follow", "-o", "json")
    assert run_cli(daemon.home, "session", "prompt", sid, "hi").returncode == 0
    child.expect(r'\{"id":"evt_\w+","session_id":"' + sid + r'".*"type":"done"')
    interrupt(child)
    assert child.exitstatus == 130 or child.signalstatus == signal.SIGINT


def interrupt_a_held_prompt(home, *arguments, says):
    """Ctrl-C `compozy session prompt` while its turn waits at gate g1: the CLI says `says` and exits 130."""
    child = spawn_cli(home, "session", "prompt", *arguments)
    child.expect("holding g1")
    interrupt(child)
    assert re.search(says, child.before), child.before
    assert child.exitstatus == 130


def test_ctrl_c_in_prompt_leaves_the_turn_running_and_says_how_to_cancel(daemon, workspace):
    sid = create(daemon.home, workspace)
    interrupt_a_held_prompt(daemon.home, sid[5:20], "[hold g1] go on",
                            says=f"the turn goes on; cancel it with `compozy session cancel {sid}`")
    assert events_of(daemon.home, sid, "done") == []
    open_gate(workspace, "g1")
    wait_for(lambda: events_of(daemon.home, sid, "done"), what="the turn to end on its own")
    assert events_of(daemon.home, sid, "done")[0]["content"]["stop_reason"] == "end_turn"


def test_ctrl_c_with_cancel_on_interrupt_cancels_the_turn(daemon, workspace):
    sid = create(daemon.home, workspace)
    interrupt_a_held_prompt(daemon.home, sid, "[hold g1] stop me", "--cancel-on-interrupt",
                            says=r"cancelling turn turn_\w+")
    wait_for(lambda: events_of(daemon.home, sid, "done"), what="the cancelled turn to end")
    assert events_of(daemon.home, sid, "done")[0]["content"]["stop_reason"] == "cancelled"
