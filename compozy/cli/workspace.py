"""`compozy workspace add|list`.

Layer 6 (surface).
"""

import os

import click

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import cli
from compozy.cli.output import emit, output_option, table


@cli.group()
def workspace():
    """Register and list workspaces.

    \b
    Example:
      compozy workspace add app ~/src/app && compozy workspace list
    """


@workspace.command("add")
@click.argument("name")
@click.argument("path", type=click.Path(file_okay=False))
@output_option()
@click.pass_obj
def add(obj, name, path, output):
    """Register the directory PATH as workspace NAME.

    \b
    Example:
      compozy workspace add app ~/src/app
    """
    document = obj.call("workspace.create", name=name, path=os.path.abspath(path))
    emit(document, output, lambda d: f"{d['workspace']['id']}  {d['workspace']['name']}  {d['workspace']['path']}")


PRESENTATION["workspace.list"] = Presentation(
    "List registered workspaces (a header line on a terminal; -q for names only).",
    "compozy workspace list -o json", lambda d, quiet: _workspace_table(d["workspaces"], quiet), quiet="workspace names")


def _workspace_table(workspaces, quiet):
    if quiet:
        return "\n".join(w["name"] for w in workspaces)
    return table([(w["id"], w["name"], w["path"]) for w in workspaces], ("ID", "NAME", "PATH"), "no workspaces")
