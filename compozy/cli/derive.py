"""`compozy session preview|rewind|continue|fork`: work derived from a session's durable history.

Layer 6 (surface). Without --expected-* flags, rewind, continue and fork read the session's current
fences through the read-only preview first.
"""

import os

import click

from compozy.api import OPS
from compozy.cli.completion import complete_agents, session_argument
from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.output import context_line, derivation_lines, emit, fence_line, output_option
from compozy.cli.prompting import runtime_body, runtime_options
from compozy.cli.session import session
from compozy.errors import CompozyError
from compozy.ids import new_id

FENCE_NAMES = tuple(name for name in OPS["session.rewind"].body if name.startswith("expected_"))


PRESENTATION["session.derive.preview"] = Presentation(
    "What a continue or fork would carry now, and the transcript fences it was measured at.",
    "compozy session preview sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY\n"
    "compozy session preview sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --message-id msg_01J9R2N3V0QF",
    lambda d: _preview_text(d["preview"]), {"message_id": "measure a fork through this user message and its turn"})


def _preview_text(preview):
    fences = preview["fences"]
    lines = [f"Context       {context_line(preview)} (source: {preview['source_message_count']} messages)",
             f"Through       turn {preview['through_turn_id'] or '-'}"
             + ("  (a running turn is left out)" if preview["source_turn_in_progress"] else "")]
    cut = preview.get("cut")
    if cut:
        lines.append(f"Cut           {cut['message_id']} (turn {cut['turn_id']}, "
                     f"{'settled' if cut['turn_settled'] else 'still running'})")
    lines += [fence_line(fences), f"Native fork   {'possible' if preview['native_fork_possible'] else 'no'}"]
    return "\n".join(lines)


def fence_options(command):
    for name in reversed(FENCE_NAMES):
        flag = "--" + name.replace("_", "-")
        command = click.option(flag, name, type=click.IntRange(0), help="fence: refuse unless the transcript still "
                               "has this value (all three together; default: read now)")(command)
    return command


def fences_for(obj, session_id, given, workspace=None, tolerate_unreadable=False):
    """The --expected-* flags as given (all three or none); without them, the session's fences read
    now through the preview (the same read-only read the web dialog uses)."""
    given = {name: value for name, value in given.items() if value is not None}
    if given and len(given) != len(FENCE_NAMES):
        raise click.UsageError("--expected-epoch, --expected-generation and --expected-max-sequence go together")
    if given:
        return given
    try:
        fences = obj.call("session.derive.preview", session_id=session_id, workspace=workspace)["preview"]["fences"]
    except CompozyError as error:
        if tolerate_unreadable and error.code == "session_not_found":
            return {}  # a rerun with its key still reaches the daemon, which looks the key up first
        raise
    return {name: fences[name.removeprefix("expected_")] for name in FENCE_NAMES}


@session.command("rewind")
@session_argument
@click.option("--message-id", required=True, help="the user message to go back to before")
@click.option("--idempotency-key", help="retry an earlier rewind exactly (default: a new key)")
@fence_options
@output_option()
@click.pass_obj
def rewind(obj, session_id, message_id, idempotency_key, output, **fences):
    """Go back to before a user message: it and everything after it are archived, its text is the draft.

    \b
    Files, tool effects and external actions are not undone.
    Example:
      compozy session rewind sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --message-id msg_01J9R2N3V0QF
    """
    fences = fences_for(obj, session_id, fences)
    document = obj.call("session.rewind", session_id=session_id, message_id=message_id,
                        idempotency_key=idempotency_key or new_id("idem"), **fences)
    emit(document, output, _rewind_text)


def _rewind_text(document):
    result, resource = document["rewind"], document["session"]
    lines = [f"Rewound {resource['id']} to before {result['target_message_id']} (turn {result['target_turn_id']})",
             f"  Archived      {result['archived_event_count']} events (sequences {result['archived_from_sequence']}"
             f"-{result['archived_through_sequence']})",
             "  " + fence_line(resource["fences"]),
             f"  Replayed      {'yes' if result['replayed'] else 'no'}",
             f"  Key           {result['idempotency_key']}",
             result["note"], "", "Draft:", result["draft_text"]]
    return "\n".join(lines)


@session.command("clear")
@session_argument
@click.option("--idempotency-key", help="retry an earlier clear exactly (default: a new key)")
@fence_options
@output_option()
@click.pass_obj
def clear(obj, session_id, idempotency_key, output, **fences):
    """Clear the conversation: every active event is archived (never deleted), a carried context is
    discarded, and the next prompt starts a fresh agent context. The session keeps its ID.

    \b
    Files, tool effects and external actions are not undone.
    Example:
      compozy session clear sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY
      compozy session history sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --archive archived
    """
    fences = fences_for(obj, session_id, fences)
    document = obj.call("session.clear", session_id=session_id, idempotency_key=idempotency_key or new_id("idem"),
                        **fences)
    emit(document, output, _clear_text)


def _clear_text(document):
    result, resource = document["clear"], document["session"]
    carried = "discarded" if result["carried_context_discarded"] else "none"
    return "\n".join([f"Cleared {resource['id']}",
                      f"  Archived      {result['archived_event_count']} events (read them with --archive archived)",
                      f"  Carried       {carried}",
                      "  " + fence_line(resource["fences"]),
                      f"  Replayed      {'yes' if result['replayed'] else 'no'}",
                      f"  Key           {result['idempotency_key']}",
                      result["note"]])


def new_session_options(command):
    """What continue and fork share: the new session's name, the key, the workspace, fences, output."""
    for option in reversed([
            click.option("--name", help="a name for the new session"),
            click.option("--idempotency-key", help="repeat an earlier request exactly (default: a new key)"),
            click.option("--workspace", help="the session's workspace (name or ID), to rerun a key after the "
                         "session is gone"),
            fence_options, output_option()]):
        command = option(command)
    return command


@session.command("continue")
@session_argument
@click.option("--agent", "agent_name", required=True, help="the agent that takes over",
              shell_complete=complete_agents)
@click.option("--message", help="the new session's first prompt (default: the context waits for your first prompt)")
@click.option("--route", type=click.IntRange(1), help="1-based route of the agent's fallback_chain (an account); "
              "not with runtime flags")
@runtime_options
@new_session_options
@click.pass_obj
def continue_(obj, session_id, agent_name, message, route, name, idempotency_key, workspace, output, **rest):
    """Continue a session with another agent in a new session; the source is not changed.

    \b
    Example:
      compozy session continue sess_01J9R2K7M4T1 --agent claude-code --message "Carry on; run the tests first."
    """
    fences = {name_: rest.pop(name_) for name_ in FENCE_NAMES}
    runtime = runtime_body(**rest) or None
    if runtime and route:
        raise click.UsageError("--route cannot be combined with runtime flags")
    derive(obj, "session.continue", session_id, workspace, idempotency_key, fences, output,
           agent_name=agent_name, message=message, route=route, runtime=runtime, name=name)


@session.command("fork")
@session_argument
@click.option("--message-id", help="fork through this user message and its turn (default: the whole conversation)")
@new_session_options
@click.pass_obj
def fork(obj, session_id, message_id, name, idempotency_key, workspace, output, **fences):
    """Fork a session to try another direction with the same agent and runtime; the source is not changed.

    \b
    Example:
      compozy session fork sess_01J9R2K7M4T1 --message-id msg_01J9R2N3V0QF
    """
    derive(obj, "session.fork", session_id, workspace, idempotency_key, fences, output, message_id=message_id,
           name=name)


def derive(obj, operation, session_id, workspace, key, fences, output, **fields):
    """A continue or fork: fences read first unless given; a failure after the new session exists
    names it and the key to rerun with."""
    rerun = key is not None
    key = key or new_id("idem")
    workspace = workspace or _workspace_of(obj, session_id, rerun)
    fences = fences_for(obj, session_id, fences, workspace, tolerate_unreadable=rerun)
    try:
        document = obj.call(operation, session_id=session_id, workspace=workspace, idempotency_key=key,
                            **fences, **fields)
    except CompozyError as error:
        if error.details.get("child_session_id"):
            click.echo(f"New session   {error.details['child_session_id']}\n"
                       f"Rerun with    --idempotency-key {key} (the same request gets the new session back)", err=True)
        raise
    emit(document, output, _derived_text)


def _workspace_of(obj, session_id, rerun):
    """The session's workspace; for a rerun whose session is gone, the workspace of this directory."""
    try:
        return obj.call("session.get", session_id=session_id)["session"]["workspace_id"]
    except CompozyError as error:
        here = _workspace_here(obj) if rerun and error.code == "session_not_found" else None
        if here is None:
            raise
        return here


def _workspace_here(obj):
    cwd = os.path.realpath(os.getcwd())
    found = [w for w in obj.call("workspace.list")["workspaces"]
             if cwd == w["path"] or cwd.startswith(w["path"].rstrip("/") + "/")]
    return max(found, key=lambda w: len(w["path"]))["id"] if found else None


def _derived_text(document):
    derivation, resource = document["derivation"], document["session"]
    child = resource["id"] if resource else "a session removed since"
    if derivation["kind"] == "continue":
        agent = f" ({resource['agent_name']})" if resource else ""
        head = f"Continued {derivation['source_session_id']} ({derivation['source_agent_name']}) into {child}{agent}"
    else:
        head = f"Forked {derivation['source_session_id']} into {child} ({derivation['source_agent_name']})"
    lines = [head, *("  " + line for line in derivation_lines(derivation))]
    if document["replayed"]:
        lines.append("  Replayed      yes" + ("; the new session was deleted since" if document.get("child_deleted")
                                              else ""))
    return "\n".join(lines)
