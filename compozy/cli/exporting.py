"""`compozy session export`: a session as one file (Markdown, HTML or JSONL), secrets redacted.

Layer 6 (surface).
"""

import sys

import click

from compozy.cli.completion import session_argument
from compozy.cli.main import choice
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
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with open(path, "wb") as handle:
        handle.write(data)
    click.echo(f"wrote {len(data)} bytes to {path}", err=True)
