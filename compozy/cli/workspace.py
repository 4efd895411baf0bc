"""`compozy workspace add|list`.

Layer 6 (surface).
"""

import os

import click

from compozy.cli.main import cli
from compozy.cli.output import emit, output_option, quiet_option, table


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


@workspace.command("list")
@quiet_option("workspace names")
@output_option()
@click.pass_obj
def list_(obj, quiet, output):
    """List registered workspaces (a header line on a terminal; -q for names only).

    \b
    Example:
      compozy workspace list -o json
    """
    document = obj.call("workspace.list")
    emit(document, output, lambda d: _workspace_table(d["workspaces"], quiet))


def _workspace_table(workspaces, quiet):
    if quiet:
        return "\n".join(w["name"] for w in workspaces)
    return table([(w["id"], w["name"], w["path"]) for w in workspaces], ("ID", "NAME", "PATH"), "no workspaces")
