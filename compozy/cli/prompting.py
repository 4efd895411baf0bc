"""`compozy session prompt|cancel|approve`, `session input ...` and `session runtime ...`.

Layer 6 (surface). `prompt` streams the answer as it arrives and exits 0 when the turn ends
normally; --detach prints the admission and returns at once.
"""

import json
import sys

import click

from compozy.cli.completion import session_argument
from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import choice
from compozy.cli.output import emit, output_option, table
from compozy.cli.progress import BindingProgress
from compozy.cli.render import admission_line, print_event
from compozy.cli.session import session
from compozy.errors import CompozyError
from compozy.ids import new_id
from compozy.text import one_line


def runtime_options(command):
    options = [
        click.option("--provider", help="provider for this prompt's runtime snapshot"),
        click.option("--model", help="logical model ID"),
        click.option("--reasoning-effort", help="reasoning effort (e.g. low, medium, high)"),
        click.option("--speed", help="speed option (e.g. normal, fast)"),
        click.option("--acp-option", "acp_options", multiple=True, metavar="ID=VALUE",
                     help="an advertised select option (repeatable)"),
        click.option("--acp-toggle", "acp_toggles", multiple=True, metavar="ID=true|false",
                     help="an advertised boolean option (repeatable)"),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def runtime_body(provider, model, reasoning_effort, speed, acp_options, acp_toggles):
    runtime = {k: v for k, v in (("provider", provider), ("model", model), ("reasoning_effort", reasoning_effort),
                                 ("speed", speed)) if v}
    entries = [{"id": i, "value_id": val} for i, val in map(_pair, acp_options)]
    for option_id, value in map(_pair, acp_toggles):
        if value not in ("true", "false"):
            raise click.BadParameter(f"--acp-toggle {option_id}={value}: use true or false")
        entries.append({"id": option_id, "bool_value": value == "true"})
    if entries:
        runtime["acp_options"] = entries
    return runtime


def _pair(text):
    option_id, sep, value = text.partition("=")
    if not sep or not option_id:
        raise click.BadParameter(f"{text!r}: expected ID=VALUE")
    return option_id, value


@session.command("prompt")
@session_argument
@click.argument("message", required=False)
@click.option("--file", "message_file", type=click.File("r", encoding="utf-8"),
              help="read the message from this file ('-' for stdin) instead of MESSAGE")
@runtime_options
@click.option("--mode", type=choice("session.prompt", "mode"), help="what to do when a turn is running")
@click.option("--expected-turn-id", help="fence: refuse if another turn is current (steer and interrupt)")
@click.option("--message-id", help="retry an exact earlier request (with --idempotency-key)")
@click.option("--idempotency-key", help="retry an exact earlier request (with --message-id)")
@click.option("--override-budget", "override_budget", is_flag=True,
              help="go past a spent budget (recorded in the turn's usage and its user_message)")
@click.option("--detach", is_flag=True, help="print the admission and return without following the turn")
@click.option("--cancel-on-interrupt", is_flag=True, help="Ctrl-C cancels the turn (by default it goes on)")
@output_option(("text", "json", "jsonl"))
@click.pass_obj
def prompt(obj, session_id, message, message_file, mode, expected_turn_id, message_id, idempotency_key, detach,
           cancel_on_interrupt, output, override_budget, **runtime):
    """Send MESSAGE to a session and stream the answer until the turn ends.

    MESSAGE '-' (or --file -) reads the message from stdin. Ctrl-C stops following and leaves
    the turn running, unless --cancel-on-interrupt is given.

    \b
    Example:
      compozy session prompt sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY "summarize the README"
      compozy session prompt 01J9Z3K6 "also the tests" --mode queue --detach
      git diff | compozy session prompt 01J9Z3K6 -
      compozy session prompt 01J9Z3K6 --file task.md
    """
    _check_identity(message_id, idempotency_key)
    message = read_message(message, message_file)
    # A retry of this exact command replays its admission: the CLI chooses the identity once.
    fields = dict(session_id=session_id, message=message, message_id=message_id or new_id("msg"),
                  idempotency_key=idempotency_key or new_id("idem"), mode=mode,
                  expected_turn_id=expected_turn_id, runtime=runtime_body(**runtime) or None,
                  override_budget=override_budget or None)
    progress = BindingProgress(obj, session_id)
    if output == "text":
        progress.begin()
    if detach:
        with progress.until_answered():
            document = obj.call("session.prompt", **fields)
        emit(document, output, lambda d: admission_line(d["prompt"]))
        return
    try:
        sys.exit(follow_prompt(progress.frames(obj.stream("session.prompt", **fields)), output))
    except KeyboardInterrupt:
        sys.exit(interrupted(obj, session_id, cancel_on_interrupt))


def read_message(message, message_file):
    """MESSAGE, '-' for stdin, or --file: exactly one of them."""
    if message_file is not None and message is not None:
        raise click.UsageError("give MESSAGE or --file, not both")
    if message_file is None and message is None:
        raise click.UsageError("missing MESSAGE (or --file PATH, or '-' to read stdin)")
    if message == "-":
        message_file = click.get_text_stream("stdin")
    text = message_file.read().rstrip("\n") if message_file is not None else message
    if not text.strip():
        raise click.UsageError("the message is blank: say what the agent should do")
    return text


def interrupted(obj, session_id, cancel):
    """Ctrl-C while following a turn: say what happens to it (the daemon owns it, not this terminal)."""
    click.echo("", err=True)
    if not cancel:
        click.echo(f"the turn goes on; cancel it with `compozy session cancel {obj.resolve_session(session_id)}`",
                   err=True)
        return 130
    try:
        answer = obj.call("session.cancel", session_id=session_id)
        click.echo(f"cancelling turn {answer['cancel']['turn_id']}", err=True)
    except CompozyError as exc:
        click.echo(f"Error: {exc.code}: {one_line(exc.message)}", err=True)
    return 130


def follow_prompt(frames, output):
    admission, last = None, None
    try:
        for event, data in frames:
            if event == "prompt":
                admission = data
                if output == "jsonl":
                    click.echo(json.dumps({"prompt": data}, separators=(",", ":")))
                elif output == "text":
                    click.echo(admission_line(data), err=True)
                continue
            last = data
            if output == "jsonl":
                click.echo(json.dumps(data, separators=(",", ":")))
            elif output == "text":
                print_event(data)
    except (OSError, ValueError) as exc:
        raise CompozyError("daemon_unavailable", f"the stream ended early: {exc}") from None
    if output == "json":
        click.echo(json.dumps({"prompt": admission, "terminal_event": last}, indent=2))
    if admission and admission.get("replayed"):
        return 0
    if last is None or last["type"] not in ("done", "error"):
        click.echo("Error: daemon_unavailable: the stream ended before the turn did", err=True)
        return 1
    return 0 if last["type"] == "done" and last["content"].get("stop_reason") != "cancelled" else 1


def _approved_line(document):
    answer = document["permission"]
    option = answer.get("option") or {}
    return f"{answer['request_id']}: {option.get('name') or option.get('option_id')} ({answer['decision']})"


@session.group("input")
def input_group():
    """The daemon-owned queue of prompts waiting for the current turn.

    \b
    Example:
      compozy session input list sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY
    """


PRESENTATION.update({
    "session.approve": Presentation(
        "Answer a pending permission request (or an agent's question) with one of the options the agent offered.\n\n"
        "--option picks an option by its ID; --decision picks the first offered option of that kind and\n"
        "is refused (permission_option_unavailable, with the offered options) when the agent offered none.\n"
        "A question (an agent's form) offers one option per choice and decline; a form that is not one\n"
        "choice is answered with --option accept --content '{\"field\": \"value\"}'.",
        "compozy session events sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --type permission -o json   # the options\n"
        "compozy session approve sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY perm_01J9Z3M2C8D4F6G8H0J2K4M6NP --option allow\n"
        "compozy session approve sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY perm_01J9Z3M2C8D4F6G8H0J2K4M6NP --decision reject-once",
        _approved_line,
        {"option_id": "answer with this option, by the ID the agent gave it (the permission event lists them)",
         "decision": "answer with the first offered option of this kind  [default without --option: allow-once]",
         "content": "a question's answer: the form's fields as a JSON object, with --option accept"},
        defaults={"decision": "allow-once"}, metavars={"option_id": "ID", "content": "JSON"}),
    "session.input.edit": Presentation(
        "Replace a queued entry's text.",
        'compozy session input edit sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY queue_01J9Z3N4B6C8D0E2F4G6H8J0KM "run the tests '
        'too"', lambda d: f"edited {d['entry']['id']}",
        {"message_id": "with --idempotency-key: retry an exact earlier edit",
         "idempotency_key": "with --message-id: retry an exact earlier edit"}),
    "session.input.steer": Presentation(
        "Promote a queued entry (optionally with new text) to steer the current turn.",
        "compozy session input steer sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY queue_01J9Z3N4B6C8D0E2F4G6H8J0KM \\\n"
        "  --expected-turn-id turn_01J9Z3P5A7B9C1D3E5F7G9H1JK", lambda d: admission_line(d["prompt"]),
        {"expected_turn_id": "the turn to steer; a newer turn refuses the request",
         "message_id": "with --idempotency-key: retry an exact earlier steer",
         "idempotency_key": "with --message-id: retry an exact earlier steer"}),
    "session.cancel": Presentation(
        "Cancel the current turn without a replacement (the session stays active).",
        text=lambda d: f"cancelling turn {d['cancel']['turn_id']}"),
    "session.input.list": Presentation(
        "List queued entries in run order (a header line on a terminal; -q for IDs only).",
        text=lambda d, quiet: "\n".join(e["id"] for e in d["entries"]) if quiet else
        table([(e["id"], e["mode"], e["message"][:60]) for e in d["entries"]], ("ID", "MODE", "MESSAGE"),
              "queue is empty"), quiet="entry IDs"),
    "session.input.cancel": Presentation(
        "Cancel a queued entry before it runs.",
        "compozy session input cancel sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY queue_01J9Z3N4B6C8D0E2F4G6H8J0KM",
        lambda d: f"canceled {d['entry']['id']}"),
})


def _check_identity(message_id, idempotency_key):
    if (message_id is None) != (idempotency_key is None):
        raise click.UsageError("--message-id and --idempotency-key go together")


@session.group("runtime")
def runtime_group():
    """Select the runtime the next prompt uses.

    \b
    Example:
      compozy session runtime set sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --model echo-1
    """


@runtime_group.command("set")
@session_argument
@runtime_options
@click.option("--expected-revision", type=int, help="selection revision you read (default: read it now)")
@output_option()
@click.pass_obj
def runtime_set(obj, session_id, expected_revision, output, **runtime):
    """Persist next-prompt runtime intent without starting or reconfiguring the agent.

    \b
    Example:
      compozy session runtime set sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --model echo-1 --reasoning-effort high
    """
    document = obj.call("session.runtime.set", session_id=session_id, runtime=runtime_body(**runtime),
                        expected_revision=_revision(obj, session_id, expected_revision))
    emit(document, output, lambda d: f"selected revision {d['session']['runtime']['selection_revision']}")


@runtime_group.command("clear")
@session_argument
@click.option("--expected-revision", type=int, help="selection revision you read (default: read it now)")
@output_option()
@click.pass_obj
def runtime_clear(obj, session_id, expected_revision, output):
    """Clear the runtime selection.

    \b
    Example:
      compozy session runtime clear sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --expected-revision 3
    """
    document = obj.call("session.runtime.clear", session_id=session_id,
                        expected_revision=_revision(obj, session_id, expected_revision))
    emit(document, output, lambda d: f"cleared (revision {d['session']['runtime']['selection_revision']})")


def _revision(obj, session_id, expected):
    if expected is not None:
        return expected
    return obj.call("session.get", session_id=session_id)["session"]["runtime"]["selection_revision"]
