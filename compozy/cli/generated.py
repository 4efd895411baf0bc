"""Click commands generated from the operation table (compozy/api.py).

Layer 6 (surface). Every operation with a `Cli` entry has a command. Where a command is more than one
call (attach, follow, several IDs, a confirmation, daemon start, a prompt's progress) it is written by
hand in the modules beside this one, on top of the same table; every other command is generated here,
once the hand-written ones are registered: its positional arguments and flags from the entry, typed by
the operation's field specs (a boolean is a bare flag, an integer keeps its bounds, a choice its
values), its help from the entry (the summary, or the words in PRESENTATION) with an example, `-o json`
always, and its text output from PRESENTATION (else the JSON document). A new operation needs no CLI code.
"""

from dataclasses import dataclass, field

import click

from compozy.api import OPERATIONS
from compozy.cli.completion import complete_agents, complete_sessions, complete_workspaces
from compozy.cli.completion import session_argument as _session_argument
from compozy.cli.output import emit, output_option, quiet_option

SAMPLES = {"session_id": "sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY", "entry": "queue_01J9Z3K6Q4V8M2N5P7R9T1W3XY",
           "request_id": "perm_01J9Z3K6Q4V8M2N5P7R9T1W3XY"}
METAVARS = {"entry": "ENTRY_ID"}
COMPLETERS = {"session_id": complete_sessions, "parent": complete_sessions, "root": complete_sessions,
              "parent_session_id": complete_sessions, "agent_name": complete_agents, "agent": complete_agents,
              "workspace": complete_workspaces}


@dataclass(frozen=True)
class Presentation:
    """How a generated command reads to a person where the table's summary is not enough."""

    help: str = ""                  # the command's help, without its example
    example: str = ""               # one or more command lines; default: made from the arguments
    text: object = None             # document -> the text output; default: the JSON document
    options: dict = field(default_factory=dict)  # field -> the flag's help
    quiet: str = ""                 # -q prints these only (text receives quiet=True then)


PRESENTATION = {}  # operation name -> Presentation, filled by the CLI modules that present their commands


def generate(root):
    """Add a generated command for each table operation whose command is not written by hand."""
    for operation in OPERATIONS:
        if operation.cli is None:
            continue
        *groups, name = operation.cli.command.split()
        group = _group(root, groups)
        if name not in group.commands:
            group.add_command(command(operation, PRESENTATION.get(operation.name, Presentation())), name)


def _group(root, names):
    group = root
    for name in names:
        if name not in group.commands:
            group.add_command(click.Group(name, help=f"The {name} commands."), name)
        group = group.commands[name]
    return group


def command(operation, presentation):
    """The click command of one operation."""
    spec = {**(operation.body or {}), **operation.query}
    params = [_argument(name) for name in operation.cli.arguments]
    params += [_option(name, flag, spec.get(name), presentation.options.get(name)) for name, flag in operation.cli.flags]
    if presentation.quiet:
        params.append(_param(quiet_option(presentation.quiet)))
    params.append(_param(output_option()))

    def run(output, quiet=False, **fields):
        document = click.get_current_context().obj.call(
            operation.name, **{name: value for name, value in fields.items() if value is not None and value is not False})
        text = presentation.text
        emit(document, output, (lambda d: text(d, quiet)) if text and presentation.quiet else text)
    name = operation.cli.command.split()[-1]
    return click.Command(name, callback=run, params=params, help=help_text(operation, presentation))


def help_text(operation, presentation):
    example = presentation.example or " ".join(
        ["compozy", operation.cli.command, *(SAMPLES.get(name, name.upper()) for name in operation.cli.arguments)])
    lines = "\n".join(f"  {line}" for line in example.splitlines())
    return f"{presentation.help or operation.summary + '.'}\n\n\b\nExample:\n{lines}"


def _argument(name):
    if name == "session_id":
        return _param(_session_argument)
    return click.Argument([name], metavar=METAVARS.get(name), shell_complete=COMPLETERS.get(name))


def _option(name, flag, spec, help_):
    keywords = {"help": help_, "shell_complete": COMPLETERS.get(name)}
    if spec is not None and bool in spec.types:
        return click.Option([flag, name], is_flag=True, default=None, **keywords)
    if spec is not None and spec.choices:
        keywords["type"] = click.Choice(list(spec.choices))
    elif spec is not None and int in spec.types:
        keywords["type"] = click.IntRange(spec.minimum, spec.maximum)
    return click.Option([flag, name], **keywords)


def _param(decorator):
    """The click parameter a decorator (click.option / click.argument) would add."""
    holder = decorator(lambda: None)
    return holder.__click_params__[0]
