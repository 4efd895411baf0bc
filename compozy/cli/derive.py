"""`compozy session preview|rewind|continue|fork`: work derived from a session's durable history.

Layer 6 (surface). Without --expected-* flags, rewind, continue and fork read the session's current
fences through the read-only preview first.
"""

import click

from compozy.api import OPS
from compozy.cli.output import context_line, emit, fence_line, output_option
from compozy.cli.session import session
from compozy.errors import CompozyError
from compozy.ids import new_id

FENCE_NAMES = tuple(name for name in OPS["session.rewind"].body if name.startswith("expected_"))


@session.command("preview")
@click.argument("session_id")
@click.option("--message-id", help="measure a fork through this user message and its turn")
@output_option()
@click.pass_obj
def preview(obj, session_id, message_id, output):
    """What a continue or fork would carry now, and the transcript fences it was measured at.

    \b
    Example:
      compozy session preview sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY
      compozy session preview sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --message-id msg_01J9R2N3V0QF
    """
    document = obj.call("session.derive.preview", session_id=session_id, message_id=message_id)
    emit(document, output, lambda d: _preview_text(d["preview"]))


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


def fences_for(obj, session_id, given, tolerate_unreadable=False):
    """The --expected-* flags as given (all three or none); without them, the session's fences read
    now through the preview (the same read-only read the web dialog uses)."""
    given = {name: value for name, value in given.items() if value is not None}
    if given and len(given) != len(FENCE_NAMES):
        raise click.UsageError("--expected-epoch, --expected-generation and --expected-max-sequence go together")
    if given:
        return given
    try:
        fences = obj.call("session.derive.preview", session_id=session_id)["preview"]["fences"]
    except CompozyError as error:
        if tolerate_unreadable and error.code == "session_not_found":
            return {}  # a rerun with its key still reaches the daemon, which looks the key up first
        raise
    return {name: fences[name.removeprefix("expected_")] for name in FENCE_NAMES}


@session.command("rewind")
@click.argument("session_id")
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
