"""`compozy session attach`: a terminal on a live session.

Layer 6 (surface). One thread follows the session's committed events (resuming by sequence after a
dropped connection) and prints them; the main thread reads lines and sends them as prompts (the
daemon applies the configured busy mode while a turn runs), runs slash commands (its own, and the
agent's, which go to the agent as prompts), and answers pending permission requests and an agent's
questions by number or name (anything else typed then is asked again, never sent as a prompt); a question
that is a free form is filled in field by field (compozy.cli.questions) and sent as the answer's content.
While a prompt it sent starts the agent, the elapsed seconds tick. Ctrl-D detaches: the session goes on. Only a live session can be
attached (archived is session_archived, stopping or stopped session_not_attachable); when it stops
while attached (a stop from anywhere, an archive with --stop), attach says why and ends. A daemon
shutdown is not the session ending: the connection drops and attach resumes when the daemon is back.
"""

import os
import select
import sys
import threading

import click

from compozy.cli.completion import session_argument
from compozy.cli.follow import Follower
from compozy.cli.progress import BindingProgress
from compozy.cli.questions import Form, is_question, question_prompt, takes_form
from compozy.cli.render import (admission_line, conversation_line, matching_option, options_of, permission_prompt,
                                print_event)
from compozy.cli.session import session
from compozy.errors import CompozyError
from compozy.ids import new_id
from compozy.text import one_line

PROMPT_MODES = ("queue", "steer", "interrupt")
HELP = """type a message to prompt the session (while a turn runs, the configured busy mode applies)
  /queue TEXT      run TEXT after the current turn
  /steer TEXT      steer the current turn with TEXT
  /interrupt TEXT  cancel the current turn and run TEXT instead
  /cancel          cancel the current turn
  /stop            stop the session (its agent process exits; a prompt starts it again)
  /decline         decline the agent's pending question
  /help            this help
  Ctrl-D           detach (the session goes on)
a pending permission request or question is answered by typing an option's number or name; until it is,
  other text is asked again (use /queue, /steer or /interrupt to prompt); a question's free form asks
  for each of its fields in turn (an empty line takes a field's default)"""
TURN_ENDS = ("done", "error")


class Attached:
    def __init__(self, obj, resource):
        self.obj, self.session_id, self.workspace = obj, resource["id"], resource["workspace_id"]
        self.follower = Follower(obj, resource)
        self.lock = threading.Lock()
        self.pending = {}  # request_id -> (turn_id, the permission event's content, a free form's Form), oldest first
        self.sent = set()  # message IDs typed here: the terminal shows them already
        self.ended = None  # (exit status, why) once attach must end
        self.wakeup_read, self.wakeup_write = os.pipe()  # wakes the typing thread when it has ended

    # -- the follower thread ------------------------------------------------------------------

    def show(self, record):
        content = record["content"]
        if record["type"] == "permission" and not content.get("decision"):
            with self.lock:
                form = Form((content.get("question") or {}).get("schema")) if takes_form(content) else None
                self.pending[content["request_id"]] = (record.get("turn_id"), content, form)
                if len(self.pending) == 1:
                    self.remind()
                else:
                    click.echo(question_prompt(content) if is_question(content) else permission_prompt(content),
                               err=True)
            return
        with self.lock:
            answered = record["type"] == "permission" and self.pending.pop(content["request_id"], None) is not None
        self.forget_pending(record)
        self.echo_conversation(record)
        if answered:
            with self.lock:
                if self.pending:
                    self.remind()  # the next one still waits for an answer

    def remind(self):
        """Show the oldest pending request (the one typing answers): its options, or its form's current field.
        Called with the lock held."""
        _, content, form = next(iter(self.pending.values()))
        click.echo(question_prompt(content) if is_question(content) else permission_prompt(content), err=True)
        if form is not None and not form.done:
            click.echo(form.ask(), nl=False, err=True)

    def echo_conversation(self, record):
        content = record["content"]
        if record["type"] == "user_message" and content.get("message_id") in self.sent:
            return
        line = conversation_line(record)
        if line is not None:
            click.echo(line, err=True)
        else:
            print_event(record)

    def show_live(self, record):
        self.show(record)
        content = record["content"]
        if record["type"] == "session_stopped" and content.get("stop_reason") == "shutdown":
            self.say("(the daemon is shutting down: attach resumes when it is back; a prompt starts the session)")
        elif record["type"] == "session_stopped":
            why = ", ".join(str(v) for v in (content.get("stop_reason"), content.get("stop_detail")) if v)
            self.end(0, f"{self.session_id} stopped ({why}): attach ends; a prompt starts it again "
                        f"(`compozy session prompt {self.session_id} MESSAGE`)")

    def end(self, status, why):
        if self.ended is None:
            self.ended = (status, why)
            click.echo(f"\n{why}", err=True)
            os.write(self.wakeup_write, b"x")

    def forget_pending(self, record):
        """A request cannot outlive its turn or its session (after a daemon restart it is never answered)."""
        if record["type"] in TURN_ENDS or record["type"] == "session_stopped":
            with self.lock:
                for request_id, (turn_id, _, _) in list(self.pending.items()):
                    if record["type"] == "session_stopped" or turn_id == record.get("turn_id"):
                        del self.pending[request_id]

    def follow(self):
        try:
            for record in self.follower.records():
                self.show_live(record)
                if self.ended is not None:
                    return
        except CompozyError as exc:
            self.end(1, f"Error: {exc.code}: {one_line(exc.message)}")

    # -- the typing thread --------------------------------------------------------------------

    def handle(self, line):
        text = line.strip()
        if self.fill(text) or not text:
            return
        if not text.startswith("/"):
            return self.answer(text) or self.prompt(text, None)
        command, _, rest = text[1:].partition(" ")
        if command in PROMPT_MODES:
            return self.prompt(rest.strip(), command) if rest.strip() else self.say(f"/{command} needs a message")
        actions = {"cancel": self.cancel, "stop": self.stop, "help": self.help, "decline": self.decline}
        if command in actions:
            return actions[command]()
        if command in {c["name"] for c in self.agent_commands()}:
            return self.prompt(text, None)  # the agent's own command: ACP sends it as the prompt's text
        self.say(f"unknown command /{command}; /help lists them")

    def agent_commands(self):
        """The commands the agent announced (kept in the session's runtime), [] when it announced none."""
        resource = self.call("session.get.scoped")
        return ((resource or {}).get("session", {}).get("runtime") or {}).get("available_commands") or []

    def help(self):
        commands = self.agent_commands()
        lines = [HELP]
        if commands:
            lines.append("the agent's commands (sent to it as a prompt):")
            lines += [f"  /{one_line(c['name']):<15} {one_line(c.get('description', ''))}"
                      + (f" ({one_line(c['hint'])})" if c.get("hint") else "") for c in commands]
        self.say("\n".join(lines))

    def oldest(self):
        """(request_id, its content, its Form or None) of the oldest pending request, or None."""
        with self.lock:
            if not self.pending:
                return None
            request_id, (_, content, form) = next(iter(self.pending.items()))
            return request_id, content, form

    def answer(self, text):
        """While a permission request or a question is pending, text answers the oldest one by an option's
        number, name or ID; text that names none is asked again. False when nothing is pending."""
        pending = self.oldest()
        if pending is None:
            return False
        request_id, content, _ = pending
        options = options_of(content)
        option = matching_option(options, text)
        if option is None:
            wanted = f"1-{len(options)} or an option's name" if options else "/cancel: it offers no options"
            self.say(f"{one_line(text)!r} is none of the options; type {wanted}")
            self.say(question_prompt(content) if is_question(content) else permission_prompt(content))
            return True
        if self.call("session.approve", request_id=request_id, option_id=option["option_id"]) is not None:
            self.settled(request_id)
        return True

    def settled(self, request_id):
        """Answered from here: typing goes to the next pending request at once (its event may come later)."""
        with self.lock:
            if self.pending.pop(request_id, None) is not None and self.pending:
                self.remind()

    def fill(self, text):
        """While the oldest pending request is a question's free form, a line (empty included, not a /command)
        is its current field's value; after the last field the form is sent as the answer's content. A
        refused answer starts the form again. False when no form is being filled."""
        pending = self.oldest()
        if pending is None or pending[2] is None or text.startswith("/"):
            return False
        request_id, _, form = pending
        problem = form.take(text) if not form.done else None  # a form of no fields is sent by any line
        if problem is not None:
            self.say(f"{problem}")
        elif form.done:
            if self.call("session.approve", request_id=request_id, option_id="accept", content=form.values) is None:
                form.restart()
            else:
                self.settled(request_id)
                return True
        if not form.done:
            click.echo(form.ask(), nl=False, err=True)
        return True

    def decline(self):
        pending = self.oldest()
        if pending is None or not is_question(pending[1]):
            return self.say("no question is pending")
        if self.call("session.approve", request_id=pending[0], option_id="decline") is not None:
            self.settled(pending[0])

    def prompt(self, message, mode):
        message_id = new_id("msg")
        self.sent.add(message_id)
        progress = BindingProgress(self.obj, self.session_id).begin()
        answer = self.call("session.prompt", message=message, mode=mode, message_id=message_id,
                           idempotency_key=new_id("idem"))
        progress.end(ok=answer is not None)
        if answer and answer["prompt"]["disposition"] != "started":
            self.say(admission_line(answer["prompt"]))

    def cancel(self):
        answer = self.call("session.cancel")
        if answer:
            self.say(f"cancelling turn {answer['cancel']['turn_id']}")

    def stop(self):
        if self.call("session.stop", wait=False) is not None:
            self.say("stopping the session")

    def call(self, name, **fields):
        try:
            return self.obj.call(name, session_id=self.session_id, workspace=self.workspace, **fields)
        except CompozyError as exc:
            self.say(f"Error: {exc.code}: {one_line(exc.message)}")
            return None

    def say(self, text):
        click.echo(text, err=True)


@session.command("attach")
@session_argument
@click.option("--last", type=click.IntRange(0, 1000), default=50, show_default=True,
              help="show the newest N events first")
@click.pass_obj
def attach(obj, session_id, last):
    """Follow a session live and prompt it from this terminal; Ctrl-D detaches, the session goes on.

    Every event is shown as it is committed (after a dropped connection, from where it stopped).
    What you type is sent as a prompt; while a turn runs the configured busy mode applies, or
    use /queue, /steer or /interrupt. /cancel cancels the turn, /stop stops the session. A
    pending permission request shows the agent's options numbered and is answered by typing a
    number or a name; until then other text is asked again, never sent as a prompt. An agent's
    question shows its choices the same way; a question that is a free form asks for each of its
    fields in turn (an empty line takes a field's default) and sends them; /decline declines it.

    \b
    Example:
      compozy session attach 01J9Z3K6
      compozy session attach sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --last 0
    """
    resource = obj.call("session.get", session_id=session_id)["session"]
    _check_attachable(resource)
    attached = Attached(obj, resource)
    if last:
        recent = obj.call("session.events", session_id=resource["id"], workspace=resource["workspace_id"], limit=last)
        for record in recent["events"]:
            attached.show(record)
            attached.follower.last = record["sequence"]
    click.echo(f"\nattached to {resource['id']} ({resource['agent_name']}, {resource['state']}); type a prompt, "
               f"/help for commands, Ctrl-D to detach", err=True)
    threading.Thread(target=attached.follow, daemon=True).start()
    sys.exit(_type_lines(attached))


DAEMON_MANAGED = ("system", "coordinator", "spawned")  # compozy.session.records.governed, as the API spells them
LIVE_STATES = ("starting", "active")


def _check_attachable(resource):
    """The seed: attach requires a live, attachable session; archive and stop end attach eligibility."""
    sid = resource["id"]
    if resource["type"] in DAEMON_MANAGED:  # the daemon owns it: no user lifecycle action, attach included
        raise CompozyError("session_daemon_managed", f"session {sid} is daemon-managed ({resource['type']}); "
                           f"it cannot be attached by a user", session_id=sid)
    if resource.get("archived"):
        raise CompozyError("session_archived", f"session {sid} is archived: attach requires a live session; "
                           f"unarchive it (`compozy session unarchive {sid}`) and prompt it first", session_id=sid)
    if resource["state"] not in LIVE_STATES:
        raise CompozyError("session_not_attachable", f"session {sid} is {resource['state']}: attach requires a "
                           f"live session; a prompt starts it again (`compozy session prompt {sid} MESSAGE`)",
                           session_id=sid, state=resource["state"])


def _type_lines(attached):
    lines = TypedLines(sys.stdin.fileno(), attached.wakeup_read)
    while attached.ended is None:
        try:
            line = lines.next()
        except EOFError:
            click.echo(f"detached; {attached.session_id} goes on", err=True)
            return 0
        except KeyboardInterrupt:
            click.echo("\n(Ctrl-D detaches; /cancel cancels the turn)", err=True)
            continue
        if line is not None:
            attached.handle(line)
    return attached.ended[0]


class TypedLines:
    """Lines typed on stdin, or None as soon as the wakeup pipe is written (the session ended)."""

    def __init__(self, fd, wakeup):
        self.fd, self.wakeup, self.pending = fd, wakeup, b""

    def next(self):
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.fd, self.wakeup], [], [])
            if self.wakeup in ready:
                return None
            chunk = os.read(self.fd, 4096)
            if not chunk:
                if not self.pending:
                    raise EOFError
                chunk = b"\n"  # the last line had no newline
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode("utf-8", "replace")
