"""`compozy session checkpoints|diff|restore` and `compozy gc`: what turns did to the workspace's files, putting
them back, and pruning what no checkpoint needs.

Layer 6 (surface). `diff` is written here (without TURN it first reads the checkpoints for the newest turn); the
others are generated from the table (compozy/cli/generated.py) with their words here.
"""

import click

from compozy.cli.completion import session_argument
from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import choice
from compozy.cli.output import emit, output_option
from compozy.cli.session import session
from compozy.errors import CompozyError

STATUS_MARK = {"added": "A", "deleted": "D", "modified": "M", "renamed": "R"}


def _checkpoints_text(document):
    lines = []
    for entry in document["checkpoints"]:
        if entry["status"] != "taken":
            lines.append(f"-  {entry['kind']:<8} turn {entry['turn_id'] or '-'}  not taken: {entry.get('message')}")
            continue
        skipped = f", {entry['skipped_count']} skipped" if entry.get("skipped_count") else ""
        lines.append(f"{entry['checkpoint_id']}  {entry['kind']:<8} turn {entry['turn_id'] or '-'}  "
                     f"{entry['files_changed']} file(s) changed{skipped}  {entry['duration_ms']:g} ms")
    return "\n".join(lines) or "No checkpoints."


@session.command("diff")
@session_argument
@click.argument("turn_id", required=False)
@click.option("--against", type=choice("session.turn.diff", "against"),
              help="end: what the turn changed (default); current: from the turn's start to the files now")
@click.option("--stat", is_flag=True, default=None, help="the changed files with line counts, without the patch")
@output_option()
@click.pass_obj
def diff(obj, session_id, turn_id, against, stat, output):
    """What a turn changed in the workspace's files, as a unified diff (binary files are named, not shown).

    \b
    TURN defaults to the session's newest turn that has a checkpoint.
    Example:
      compozy session diff sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --stat
      compozy session diff sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY turn_01J9R2N3V0QF --against current
    """
    turn_id = turn_id or _newest_turn(obj, session_id)
    document = obj.call("session.turn.diff", session_id=session_id, turn_id=turn_id, against=against,
                        stat="true" if stat else None)
    emit(document, output, _diff_text)


def _newest_turn(obj, session_id):
    entries = obj.call("session.checkpoints", session_id=session_id)["checkpoints"]
    started = [entry["turn_id"] for entry in entries if entry["kind"] == "start" and entry["status"] == "taken"]
    if not started:
        raise CompozyError("checkpoint_not_found", f"session {session_id} has no turn with a checkpoint yet")
    return started[-1]


def _diff_text(document):
    diff = document["diff"]
    if not diff["files"]:
        return f"Turn {diff['turn_id']} changed no files."
    if "patch" not in diff:
        return "\n".join(_file_lines(diff["files"]) + [f"{diff['files_changed']} file(s) changed"])
    return diff["patch"].rstrip("\n") + ("\n[diff truncated]" if diff.get("truncated") else "")


def _file_lines(files):
    lines = []
    for item in files:
        name = f"{item['from']} -> {item['path']}" if item.get("from") else item["path"]
        counts = "binary" if item.get("binary") else f"+{item.get('added', 0)} -{item.get('deleted', 0)}"
        lines.append(f"{STATUS_MARK.get(item['status'], '?')} {name}  {counts}")
    return lines


def restore_text(result):
    verb = "Would change" if result["dry_run"] else "Restored"
    lines = [f"{verb} {result['files_changed']} file(s) to checkpoint {result['checkpoint_id']}"]
    lines += ["  " + line for line in _file_lines(result["files"])]
    for other in result.get("other_sessions") or ():
        lines.append(f"  Changed since by session {other['session_id']}: {', '.join(other['files'])}")
    if result.get("undo_checkpoint_id"):
        lines.append(f"Undo with: compozy session restore SESSION {result['undo_checkpoint_id']}")
    return "\n".join(lines)


def _gc_text(document):
    report = document["gc"]
    return (f"{report['repositories']} repositories: {report['checkpoints_dropped']} checkpoints dropped, "
            f"{report['checkpoints_kept']} kept; {report['bytes_before']:,} -> {report['bytes_after']:,} bytes")


PRESENTATION.update({
    "session.checkpoints": Presentation(
        "The session's file checkpoints, oldest first (one when each turn started and ended).",
        text=_checkpoints_text),
    "session.checkpoint.restore": Presentation(
        "Put the workspace's files back to a checkpoint; the conversation is not changed.\n\n"
        "The files as they are now are checkpointed first: restore that checkpoint to undo.",
        "compozy session restore sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY ckpt_01J9R2N3V0QF --dry-run",
        lambda d: restore_text(d["restore"]), {"dry_run": "show what would change; change nothing"}),
    "daemon.gc": Presentation(
        "Drop the checkpoints retention lets go (checkpoints.keep_last, checkpoints.keep_for, removed sessions) "
        "and\nprune the files no checkpoint needs from the shadow repositories.",
        text=_gc_text),
})
