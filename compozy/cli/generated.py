"""Click commands generated from the operation table (compozy/api.py).

Layer 6 (surface). Every operation with a `Cli` entry has a command. Where a command is more than one
call or does work of its own (attach, follow, several IDs, a confirmation, daemon start, a prompt's
progress, a read before the call) it is written by hand in the modules beside this one, on top of the
same table; every other command is generated here, once the hand-written ones are registered: its
positional arguments and flags from the entry, typed by the operation's field specs (a boolean is a bare
flag, an integer keeps its bounds, a choice its values, an object is JSON, a required field is
required), its help from the entry (the summary, or the words in PRESENTATION) with an example, `-o json` always, and its text
output from PRESENTATION (else the JSON document; a file an operation answers is written to -o), with the exit
status it gives (1 when the answer says something failed) and the time an answer may take.
Operations sharing a command path make one command that calls the one the given flags name (its
Cli.selector flag, else the one with the fewest fields taking every flag given). A new operation needs
no CLI code.
"""

import json
import sys
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
    options: dict = field(default_factory=dict)  # field (or a selector flag) -> the flag's help
    quiet: str = ""                 # -q prints these only (text receives quiet=True then)
    # field -> the value sent when its flag is not given, shown in the help; a boolean with a default is
    # --flag/--no-flag; a field of a one_of rule gets it only when none of the rule's fields is given
    defaults: dict = field(default_factory=dict)
    types: dict = field(default_factory=dict)    # field -> a click type the spec cannot say (a folder)
    convert: dict = field(default_factory=dict)  # field -> what is sent for the value given (an absolute path)
    metavars: dict = field(default_factory=dict)  # field -> the word its help shows for the value
    one_of: tuple = ()              # fields of which exactly one is given (a usage error otherwise)
    shorthands: dict = field(default_factory=dict)  # a bare flag -> (field, value) it stands for (--fleet)
    wait: float = 0.0               # seconds the answer may take (a doctor's run); 0: the client's default
    succeeded: object = None        # document -> false: exit status 1 after the output (a failed doctor step)


PRESENTATION: dict = {}  # operation name -> Presentation, filled by the CLI modules that present their commands


def generate(root):
    """Add a generated command for each command of the table that is not written by hand; operations that
    share a command (`session get` and its workspace-scoped twin, `storage` and `storage --retention`) make
    one command that calls the one the given flags name."""
    shared: dict = {}
    for operation in OPERATIONS:
        if operation.cli is not None:
            shared.setdefault(operation.cli.command, []).append(operation)
    for path, operations in shared.items():
        *groups, name = path.split()
        group = _group(root, groups)
        if name not in group.commands:
            group.add_command(command(operations), name)


def _group(root, names):
    group = root
    for name in names:
        if name not in group.commands:
            group.add_command(click.Group(name, help=f"The {name} commands."), name)
        group = group.commands[name]
    return group


def _presentation(operation):
    return PRESENTATION.get(operation.name, Presentation())


def _spec(operation):
    return {**(operation.body or {}), **operation.query}


def _fields(operation):
    return {*operation.cli.arguments, *(name for name, _ in operation.cli.flags)}


def _shorthand_param(flag):
    return "shorthand_" + flag.lstrip("-").replace("-", "_")


def _selector_param(operation):
    return "select_" + operation.name.replace(".", "_")


def command(operations):
    """The click command of the operations that share one command path (most often one)."""
    main = next((op for op in operations if not op.cli.selector), operations[0])
    presentation = _presentation(main)
    params, seen = [], set()
    for operation in operations:
        spec = _spec(operation)
        for name in operation.cli.arguments:
            if name not in seen:
                seen.add(name)
                everywhere = all(name in op.cli.arguments for op in operations)
                params.append(_argument(name, everywhere and _required(spec.get(name)), _presentation(operation)))
    for operation in operations:
        spec, shown = _spec(operation), _presentation(operation)
        if operation.cli.selector:
            params.append(click.Option([operation.cli.selector, _selector_param(operation)], is_flag=True,
                                       help=shown.options.get(operation.cli.selector) or operation.summary))
        for name, flag in operation.cli.flags:
            if name not in seen:
                seen.add(name)
                required = _required(spec.get(name)) and all(name in _fields(op) for op in operations)
                params.append(_option(name, flag, spec.get(name), shown, required, _in_one_of(operation, name)))
    for flag in presentation.shorthands:
        params.append(click.Option([flag, _shorthand_param(flag)], is_flag=True, help=presentation.options.get(flag)))
    quiet = next((_presentation(op).quiet for op in operations if _presentation(op).quiet), "")
    if quiet:
        params.append(_param(quiet_option(quiet)))
    params.append(_file_option(presentation) if _answers_a_file(main) else _param(output_option()))

    def run(output, quiet=False, **values):
        for flag, (name, value) in presentation.shorthands.items():
            if values.pop(_shorthand_param(flag)):
                values[name] = value
        operation = _chosen(operations, values)
        shown = _presentation(operation)
        fields = _request(operation, shown, values)
        obj = click.get_current_context().obj
        if _answers_a_file(operation):
            write_file(obj.file(operation.name, **fields)[1], output)
            return
        if shown.wait:
            obj.timeout = shown.wait
        document = obj.call(operation.name, **fields)
        text = shown.text
        emit(document, output, (lambda d: text(d, quiet)) if text and shown.quiet else text)
        if shown.succeeded is not None and not shown.succeeded(document):
            sys.exit(1)
    name = main.cli.command.split()[-1]
    return click.Command(name, callback=run, params=params, help=help_text(main, presentation))


def _answers_a_file(operation):
    return any(success.media for success in operation.success)


def _file_option(presentation):
    """An operation that answers a file (an export) writes it: -o names the file (-: standard output)."""
    default = presentation.defaults.get("output")
    return click.Option(["-o", "--output", "output"], type=click.Path(dir_okay=False, allow_dash=True),
                        default=default, required=default is None,
                        help=presentation.options.get("output", "the file to write (- : standard output)"))


def write_file(data, path):
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    with open(path, "wb") as handle:
        handle.write(data)
    click.echo(f"wrote {len(data)} bytes to {path}", err=True)


def _required(spec):
    """A path parameter (no spec) or a required field."""
    return spec is None or spec.required


def _in_one_of(operation, name):
    return any(rule.kind == "one_of" and name in rule.names for rule in operation.rules)


def _flag(operation, name):
    return dict(operation.cli.flags).get(name) or name.upper()


def _chosen(operations, values):
    """The operation the given flags name: a selector's, else the one with the fewest fields that takes all
    the given ones."""
    selected = [op for op in operations if op.cli.selector and values.pop(_selector_param(op), False)]
    given = {name for name, value in values.items() if value is not None and value is not False}
    if len(selected) > 1:
        raise click.UsageError(f"give one of {', '.join(op.cli.selector for op in selected)}")
    if selected:
        operation = selected[0]
        extra = sorted(given - _fields(operation))
        if extra:
            flags = [dict(op.cli.flags).get(name) for op in operations for name in extra]
            raise click.UsageError(f"{next(f for f in flags if f) if any(flags) else extra[0].upper()} does not go "
                                   f"with {operation.cli.selector}")
        return operation
    plain = [op for op in operations if not op.cli.selector and given <= _fields(op)]
    if plain:
        return min(plain, key=lambda op: len(_fields(op)))
    for op in operations:
        extra = sorted(given & _fields(op))
        if op.cli.selector and extra:
            raise click.UsageError(f"{_flag(op, extra[0])} goes with {op.cli.selector}")
    raise click.UsageError("these flags do not go together")


def _request(operation, shown, values):
    """The fields sent: the operation's own that were given, the defaults the command states, converted."""
    fields = {name: values.get(name) for name in _fields(operation)}
    spec = _spec(operation)
    for name in operation.cli.arguments:
        if fields[name] is None and _required(spec.get(name)):
            raise click.UsageError(f"{operation.cli.command} needs {name.upper()}, e.g. "
                                   f"{_example(operation, shown).splitlines()[0]}")
    if shown.one_of and sum(fields.get(name) is not None for name in shown.one_of) != 1:
        raise click.UsageError(f"name {' or '.join(_flag(operation, n) for n in shown.one_of)}, one of the two"
                               if len(shown.one_of) == 2 else
                               f"name one of {', '.join(_flag(operation, n) for n in shown.one_of)}")
    for rule in operation.rules:
        given = [name for name in rule.names if fields.get(name) is not None]
        if rule.kind == "together" and 0 < len(given) < len(rule.names):
            raise click.UsageError(f"{' and '.join(_flag(operation, n) for n in rule.names)} go together")
        if rule.kind == "one_of" and not given:
            fields.update({name: shown.defaults[name] for name in rule.names if name in shown.defaults})
    for name, convert in shown.convert.items():
        if fields.get(name) is not None:
            fields[name] = convert(fields[name])
    # a bare flag not given is False: left out; a --flag/--no-flag pair (it has a default) sends False too
    return {name: value for name, value in fields.items()
            if value is not None and (value is not False or name in shown.defaults)}


def _example(operation, presentation):
    return presentation.example or " ".join(
        ["compozy", operation.cli.command, *(SAMPLES.get(name, name.upper()) for name in operation.cli.arguments)])


def help_text(operation, presentation):
    lines = "\n".join(f"  {line}" for line in _example(operation, presentation).splitlines())
    return f"{presentation.help or operation.summary + '.'}\n\n\b\nExample:\n{lines}"


def _argument(name, required, presentation):
    if name == "session_id":
        return _param(_session_argument)
    return click.Argument([name], required=required, metavar=presentation.metavars.get(name, METAVARS.get(name)),
                          type=presentation.types.get(name),
                          shell_complete=COMPLETERS.get(name))


def _option(name, flag, spec, presentation, required=False, chosen_by_rule=False):
    default = presentation.defaults.get(name)
    keywords = {"help": presentation.options.get(name), "shell_complete": COMPLETERS.get(name),
                "required": required and default is None, "metavar": presentation.metavars.get(name)}
    if spec is not None and bool in spec.types:
        if default is not None:
            return click.Option([f"{flag}/--no-{flag[2:]}", name], default=default, show_default=True, **keywords)
        return click.Option([flag, name], is_flag=True, default=None, **keywords)
    if name in presentation.types:
        keywords["type"] = presentation.types[name]
    elif spec is not None and spec.choices:
        keywords["type"] = click.Choice(list(spec.choices))
    elif spec is not None and int in spec.types:
        keywords["type"] = click.IntRange(spec.minimum, spec.maximum)
    elif spec is not None and dict in spec.types:
        keywords["type"] = JSON_OBJECT
    if default is not None and not chosen_by_rule:
        keywords.update(default=default, show_default=True)
    return click.Option([flag, name], **keywords)


class JsonObject(click.ParamType):
    """A field that takes an object (a question's answer): given as JSON on the command line."""

    name = "json"

    def convert(self, value, param, ctx):
        if isinstance(value, dict):
            return value
        try:
            parsed = json.loads(value)
        except ValueError as error:
            self.fail(f"not JSON: {error}", param, ctx)
        if not isinstance(parsed, dict):
            self.fail('a JSON object, e.g. {"answer": "yes"}', param, ctx)
        return parsed


JSON_OBJECT = JsonObject()


def _param(decorator):
    """The click parameter a decorator (click.option / click.argument) would add."""
    holder = decorator(lambda: None)
    return holder.__click_params__[0]
