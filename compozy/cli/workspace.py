"""`compozy workspace add|list`.

Layer 6 (surface). Both are generated from the table (compozy/cli/generated.py) with their words here.
"""

import os

import click

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import cli
from compozy.cli.output import table


@cli.group()
def workspace():
    """Register and list workspaces.

    \b
    Example:
      compozy workspace add app ~/src/app && compozy workspace list
    """


PRESENTATION["workspace.create"] = Presentation(
    "Register the directory PATH as workspace NAME.", "compozy workspace add app ~/src/app",
    lambda d: f"{d['workspace']['id']}  {d['workspace']['name']}  {d['workspace']['path']}",
    types={"path": click.Path(file_okay=False)}, convert={"path": os.path.abspath})
PRESENTATION["workspace.list"] = Presentation(
    "List registered workspaces (a header line on a terminal; -q for names only).",
    "compozy workspace list -o json", lambda d, quiet: _workspace_table(d["workspaces"], quiet), quiet="workspace names")


def _workspace_table(workspaces, quiet):
    if quiet:
        return "\n".join(w["name"] for w in workspaces)
    return table([(w["id"], w["name"], w["path"]) for w in workspaces], ("ID", "NAME", "PATH"), "no workspaces")
