"""`compozy storage`: what the home takes on disk; `--retention` carries out the [retention] policy.

Layer 6 (surface). Generated from the table (compozy/cli/generated.py): storage.get, and storage.retention
through its selector --retention (`--dry-run` goes with it); their words are here.
"""

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.output import table


def size(count):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024


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


PRESENTATION.update({
    "storage.get": Presentation(
        "Bytes on disk by kind, workspace (its checkpoint repository too) and session, the growth of the last 7 "
        "days\nand the disk budget.",
        "compozy storage\ncompozy storage --retention --dry-run\ncompozy storage -o json | jq .storage.kinds",
        _report, {"limit": "sessions listed, largest first (default 50)"}),
    "storage.retention": Presentation(
        text=_retention,
        options={"--retention": "carry out the [retention] policy now (compact and delete archived sessions past "
                                "their days, rotate logs, remove old crash bundles)",
                 "dry_run": "with --retention: list what the policy would do, change nothing"}),
})
