"""`compozy storage`: what the home takes on disk; `--retention` carries out the [retention] policy.

Layer 6 (surface).
"""

import click

from compozy.cli.main import cli
from compozy.cli.output import emit, output_option, table


def size(count):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024


@cli.command("storage")
@click.option("--limit", type=click.IntRange(1, 10000), help="sessions listed, largest first (default 50)")
@click.option("--retention", is_flag=True, help="carry out the [retention] policy now (compact and delete archived "
              "sessions past their days, rotate logs, remove old crash bundles)")
@click.option("--dry-run", "dry_run", is_flag=True, help="with --retention: list what the policy would do, change nothing")
@output_option()
@click.pass_obj
def storage(obj, limit, retention, dry_run, output):
    """Bytes on disk by kind, workspace (its checkpoint repository too) and session, the growth of the last 7 days and the disk budget.

    \b
    Example:
      compozy storage
      compozy storage --retention --dry-run
      compozy storage -o json | jq .storage.kinds
    """
    if dry_run and not retention:
        raise click.UsageError("--dry-run goes with --retention")
    if retention:
        document = obj.call("storage.retention", dry_run=dry_run or None)
        emit(document, output, _retention)
        return
    emit(obj.call("storage.get", limit=limit), output, _report)


def _report(document):
    report = document["storage"]
    growth = report["growth"]
    lines = [f"total {size(report['total_bytes'])}" + (f" of {size(report['max_bytes'])} (storage.max_bytes)"
                                                       if report["max_bytes"] else ""),
             f"growth {size(growth['bytes'])} since {growth['since']}", ""]
    lines.append(table([[kind, size(count)] for kind, count in report["kinds"].items()], ["KIND", "BYTES"], ""))
    lines += ["", table([[w["workspace_id"], size(w["bytes"]), f"checkpoints {size(w['checkpoints'])}"]
                         for w in report["workspaces"]], ["WORKSPACE", "BYTES", ""], "no workspaces")]
    lines += ["", table([[s["session_id"], size(s["bytes"]), "archived" if s["archived"] else ""]
                         for s in report["sessions"]], ["SESSION", "BYTES", ""], "no sessions")]
    if report["attention"]:
        lines += ["", "attention: " + report["attention"]["summary"]]
    return "\n".join(lines)


def _retention(document):
    plan = document["retention"]
    verb = "would" if plan["dry_run"] else "did"
    lines = [f"{verb} compact {s['session_id']} ({size(s['bytes'])})" for s in plan["compact"]]
    lines += [f"{verb} delete {s['session_id']} (archived {s['archived_at']})" for s in plan["delete"]]
    lines += [f"{verb} rotate the daemon's log"] if plan["logs"]["rotate"] else []
    lines += [f"{verb} remove {item['path']}" for item in plan["logs"]["remove"] + plan["crash_bundles"]]
    return "\n".join(lines) or "nothing to do: the policy has no work now"
