"""The commands of the `compozy` CLI, by path ("session input steer")."""

import click

from compozy.cli.main import cli, commands


def cli_commands():
    commands()  # the hand-written commands and the generated ones
    return dict(_walk(cli, ""))


def cli_groups():
    """The groups, the root ("") included."""
    cli_commands()
    return dict(_walk(cli, "", groups=True))


def _walk(group, prefix, groups=False):
    if groups:
        yield prefix, group
    for name, command in group.commands.items():
        path = f"{prefix} {name}".strip()
        if isinstance(command, click.Group):
            if command.invoke_without_command and not groups:
                yield path, command  # a group that is a command of its own too (`inbox`, `inbox answer`)
            yield from _walk(command, path, groups)
        elif not groups:
            yield path, command
