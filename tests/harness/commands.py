"""The commands of the `compozy` CLI, by path ("session input steer")."""

import click

from compozy.cli.main import cli


def cli_commands():
    from compozy.cli import (agent, daemon, derive, history, lifecycle, prompting, session,  # noqa: F401 (register)
                             workspace)
    return dict(_walk(cli, ""))


def _walk(group, prefix):
    for name, command in group.commands.items():
        path = f"{prefix} {name}".strip()
        if isinstance(command, click.Group):
            yield from _walk(command, path)
        else:
            yield path, command
