"""`compozy workspace add|list`.

Layer 6 (surface).
"""

import os

import click

from compozy.cli.main import cli
from compozy.cli.output import emit, output_option


@cli.group()
def workspace():
    """Register and list workspaces."""


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
@output_option()
@click.pass_obj
def list_(obj, output):
    """List registered workspaces.

    \b
    Example:
      compozy workspace list -o json
    """
    document = obj.call("workspace.list")
    emit(document, output, lambda d: "\n".join(f"{w['id']}  {w['name']:<20}  {w['path']}" for w in d["workspaces"])
         or "no workspaces")
