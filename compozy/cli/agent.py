"""`compozy agent list`, and the hidden `compozy agent reference` (the built-in ACP agent on stdio,
used by the zipapp).

Layer 6 (surface).
"""

import click

from compozy.cli.main import cli
from compozy.cli.output import emit, output_option, quiet_option, table


@cli.group()
def agent():
    """The agents sessions run: list them (configure them in config.toml, see docs/agents.md).

    \b
    Example:
      compozy agent list
    """


@agent.command("list")
@quiet_option("agent names")
@output_option()
@click.pass_obj
def list_(obj, quiet, output):
    """The configured agents: provider, command (FOUND: on PATH), default runtime; * marks the default.

    \b
    Example:
      compozy agent list
      compozy agent list -o json
    """
    document = obj.call("agent.list")
    emit(document, output, lambda d: "\n".join(a["name"] for a in d["agents"]) if quiet else _agents_table(d))


def _agents_table(document):
    rows = [(a["name"] + (" *" if a["default"] else ""), a["provider"], "yes" if a["found"] else "NO",
             " ".join(f"{k}={v}" for k, v in a["runtime"].items() if k != "provider") or "-",
             " ".join(a["command"])) for a in document["agents"]]
    return table(rows, ("NAME", "PROVIDER", "FOUND", "RUNTIME", "COMMAND"), "no agents")


@agent.command("reference", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("launch_args", nargs=-1, type=click.UNPROCESSED)
def reference(launch_args):
    """Run the built-in reference ACP agent on stdin/stdout.

    \b
    Example:
      compozy agent reference < requests.jsonl
    """
    from compozy.agents.reference import main
    main(launch_args)
