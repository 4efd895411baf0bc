"""`compozy session export`: a session as one file (Markdown, HTML or JSONL), secrets redacted; `compozy export`:
a workspace's or a lineage's sessions as one zip archive.

Layer 6 (surface). Both are generated from the table (compozy/cli/generated.py), which writes the file an
operation answers to -o; their words are here.
"""

import click

from compozy.cli.generated import PRESENTATION, Presentation

PRESENTATION.update({
    "session.export": Presentation(
        "Export a session: its transcript, tool calls, permissions and usage, with every secret redacted.",
        "compozy session export 01J9Z3K6 > session.md\n"
        "compozy session export 01J9Z3K6 --format html -o session.html\n"
        "compozy session export 01J9Z3K6 --format jsonl | jq .type",
        options={"format": "md for people, html (one self-contained page), jsonl (every stored event, for machines)",
                 "output": "the file to write (default -: standard output)"},
        defaults={"format": "md", "output": "-"}),
    "export.archive": Presentation(
        "Export many sessions as one zip archive: a workspace, or a lineage.",
        "compozy export --workspace api -o api.zip\ncompozy export --lineage 01J9Z3K6 --format jsonl -o lineage.zip",
        options={"workspace": "every session of a workspace (name or ID)",
                 "lineage": "a session with its children, continues and forks (its ID)",
                 "format": "each session's file: md, html or jsonl", "output": "the zip file to write (- : standard output)"},
        defaults={"format": "md"}, one_of=("workspace", "lineage"),
        convert={"lineage": lambda typed: click.get_current_context().obj.resolve_session(typed)}),
})
