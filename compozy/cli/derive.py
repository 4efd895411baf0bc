"""`compozy session preview`: what a continue or fork would carry from a session right now.

Layer 6 (surface). The rewind, continue and fork commands read their fences through it.
"""

import click

from compozy.cli.output import context_line, emit, fence_line, output_option
from compozy.cli.session import session


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
