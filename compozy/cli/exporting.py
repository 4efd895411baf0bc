"""`compozy session export`: a session as one file (Markdown, HTML or JSONL), secrets redacted; `compozy export`:
a workspace's or a lineage's sessions as one zip archive.

Layer 6 (surface).
"""

import sys

import click

from compozy.cli.completion import session_argument
from compozy.cli.main import choice, cli
from compozy.cli.session import session


@session.command("export")
@session_argument
@click.option("--format", "format", type=choice("session.export", "format"), default="md", show_default=True,
              help="md for people, html (one self-contained page), jsonl (every stored event, for machines)")
@click.option("-o", "--output", "path", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              help="the file to write (default -: standard output)")
@click.pass_obj
def export(obj, session_id, format, path):
    """Export a session: its transcript, tool calls, permissions and usage, with every secret redacted.

    \b
    Example:
      compozy session export 01J9Z3K6 > session.md
      compozy session export 01J9Z3K6 --format html -o session.html
      compozy session export 01J9Z3K6 --format jsonl | jq .type
    """
    _, data = obj.file("session.export", session_id=session_id, format=format)
    write(data, path)


@cli.command("export")
@click.option("--workspace", help="every session of a workspace (name or ID)")
@click.option("--lineage", help="a session with its children, continues and forks (its ID)")
@click.option("--format", "format", type=choice("export.archive", "format"), default="md", show_default=True,
              help="each session's file: md, html or jsonl")
@click.option("-o", "--output", "path", type=click.Path(dir_okay=False, allow_dash=True), required=True,
              help="the zip file to write (- : standard output)")
@click.pass_obj
def export_archive(obj, workspace, lineage, format, path):
    """Export many sessions as one zip archive: a workspace, or a lineage.

    \b
    Example:
      compozy export --workspace api -o api.zip
      compozy export --lineage 01J9Z3K6 --format jsonl -o lineage.zip
    """
    if (workspace is None) == (lineage is None):
        raise click.UsageError("name --workspace or --lineage, one of the two")
    lineage = obj.resolve_session(lineage) if lineage else None
    _, data = obj.file("export.archive", workspace=workspace, lineage=lineage, format=format)
    write(data, path)


def write(data, path):
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with open(path, "wb") as handle:
        handle.write(data)
    click.echo(f"wrote {len(data)} bytes to {path}", err=True)
