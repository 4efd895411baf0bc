"""Scenario operations: the operation table (compozy/api.py) plus what only the surfaces know.

Scenario arguments name the path parameters `session`, `workspace`, `entry` and `agent_name`; every other
argument is the operation's body or query. From the table the in-process surface gets the façade
method and its keywords, HTTP the request, and the CLI the command, its arguments and its flags;
this module keeps the rest: the streaming variant of a prompt and the CLI spellings the table
cannot hold (a runtime snapshot as flags, --detach, -o json).
"""

import json

from compozy.api import OPS as TABLE

from tests.harness.scenario import ScenarioError

STREAM = "session.prompt.stream"  # session.prompt with Accept: text/event-stream, collected
ALIASES = {"session": "session_id"}
# The operations a scenario can run: all but the event streams and the document itself.
OPS = {name: operation for name, operation in TABLE.items() if operation.facade and operation.stream != "always"}
OPS[STREAM] = TABLE["session.prompt"]


def fields_of(args):
    """Scenario arguments as the table names them."""
    return {ALIASES.get(name, name): value for name, value in args.items()}


def in_body(fields):
    """The body with its `body.NAME` arguments as NAME: a body field named like a path parameter (a fork's
    `"workspace": "copy"`, operation.Spelling)."""
    return {name.removeprefix("body."): value for name, value in fields.items()}


def argv(op_name, fields):
    """The CLI command line for an operation (without -o json, which the CLI surface adds)."""
    operation, fields = OPS[op_name], dict(fields)
    command = operation.cli.command.split()
    flags = dict(operation.cli.flags)
    if "workspace" in operation.path_params and "workspace" not in flags:
        fields.pop("workspace", None)  # the CLI learns a session's workspace itself
    command += [str(fields.pop(name)) for name in operation.cli.arguments if name in fields]
    for name, flag in flags.items():
        value = fields.pop(name, None)
        value = json.dumps(value) if isinstance(value, dict) else value  # a JSON object flag (--content)
        command += [] if value is None or value is False else [flag] if value is True else [flag, str(value)]
    command += runtime_flags(fields.pop("runtime", None))
    if fields:
        raise ScenarioError(f"{op_name}: the CLI has no spelling for {', '.join(sorted(fields))}")
    if op_name == STREAM:
        return command + ["-o", "json"]
    if any(success.media for success in operation.success):
        return command + ["-o", "-"]  # a file command's -o is the file to write: standard output here
    if operation.cli.selector:
        return command + [operation.cli.selector]  # operations that share a command: the flag says which
    if op_name.startswith("session.remove"):
        return command + ["--yes"]  # a script removes without a terminal to confirm on
    return command + (["--detach"] if op_name == "session.prompt" else [])


def runtime_flags(runtime):
    argv = []
    for name in ("provider", "model", "reasoning_effort", "speed"):
        if (runtime or {}).get(name):
            argv += ["--" + name.replace("_", "-"), str(runtime[name])]
    for option in (runtime or {}).get("acp_options", []):
        if "bool_value" in option:
            argv += ["--acp-toggle", f"{option['id']}={'true' if option['bool_value'] else 'false'}"]
        else:
            argv += ["--acp-option", f"{option['id']}={option['value_id']}"]
    return argv


def collect(pairs):
    """The streaming form collected: the admission plus the turn's records."""
    admission, events = None, []
    flat = (pair for item in pairs for pair in (item if isinstance(item, list) else [item]))  # batches
    for event, data in flat:
        if event == "prompt":
            admission = data
        elif event is not None:
            events.append(data)
    return {"prompt": admission, "terminal_event": events[-1] if events else None}
