"""Every operation of the table (compozy/api.py) is on each surface it belongs to: a Flask rule, a
façade method that takes its arguments, a CLI command with its arguments and flags, a native tool
name where the interface names one; and every CLI command is an operation or manages the daemon."""

import inspect
import re

import click
import pytest

from compozy.api import OPERATIONS
from compozy.http.app import create_app
from compozy.http.auth import Auth
from compozy.manager import SessionManager
from tests.harness.commands import cli_commands

# Commands that run or manage the daemon process itself rather than call the API.
# `completion` prints a shell script; `mcp relay` carries the tool server over stdio.
LOCAL_COMMANDS = {"daemon run", "daemon start", "daemon stop", "daemon status", "daemon reload", "agent reference",
                  "completion", "config check", "agent login", "agent add", "mcp relay"}
# CLI flags whose value the command reshapes before it becomes the field.
RESHAPED_FLAGS = {("session new", "--cwd"): "made absolute; the current directory when --workspace is not given"}
# An event stream's view reads headers (Last-Event-ID) as well and calls its façade method itself.
FACADE_OPERATIONS = [op for op in OPERATIONS if op.facade and op.stream != "always"]
CLI_OPERATIONS = [op for op in OPERATIONS if op.cli]


COMMANDS = cli_commands()


def test_every_operation_is_a_flask_rule_and_nothing_else_is():
    app = create_app(manager=None, auth=Auth("secret"))
    served = {(rule.rule, method) for rule in app.url_map.iter_rules()
              if rule.endpoint != "static"
              and not rule.endpoint.startswith(("page.", "mcp."))  # the web page and the tool server, not the API
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    assert served == {(op.rule, op.method) for op in OPERATIONS}


@pytest.mark.parametrize("operation", FACADE_OPERATIONS, ids=[op.name for op in FACADE_OPERATIONS])
def test_every_operation_has_a_facade_method_that_takes_its_arguments(operation):
    method = getattr(SessionManager, operation.facade)
    arguments = dict.fromkeys(operation.path_params, "x")
    if operation.body is not None:
        arguments["body"] = {}
    if operation.query:
        arguments["query"] = {}
    inspect.signature(method).bind(None, **arguments)


@pytest.mark.parametrize("operation", CLI_OPERATIONS, ids=[op.name for op in CLI_OPERATIONS])
def test_every_cli_operation_has_its_command_arguments_and_flags(operation):
    command = COMMANDS[operation.cli.command]
    # An argument that takes several values (`session stop ID [ID ...]`) stands for the table's one.
    arguments = [p.name[:-1] if p.nargs == -1 and p.name.endswith("s") else p.name
                 for p in command.params if isinstance(p, click.Argument)]
    assert arguments[:len(operation.cli.arguments)] == list(operation.cli.arguments)
    options = {flag: p for p in command.params if isinstance(p, click.Option) for flag in p.opts}
    for name, flag in operation.cli.flags:
        option = options[flag]
        field = {**(operation.body or {}), **operation.query}.get(name)
        assert field is not None or name in operation.path_params, (flag, name)
        if (operation.cli.command, flag) not in RESHAPED_FLAGS:
            assert option.name == name, flag
        if field is not None and field.choices and isinstance(option.type, click.Choice):
            assert list(option.type.choices) == list(field.choices), flag
        if field is not None and field.types == (bool,):
            assert option.is_flag, flag


def test_every_cli_command_is_an_operation_or_manages_the_daemon():
    assert set(COMMANDS) - {op.cli.command for op in CLI_OPERATIONS} == LOCAL_COMMANDS


def test_native_tools_are_the_ones_the_interface_names():
    tools = [op.tool.name for op in OPERATIONS if op.tool]
    assert len(tools) == len(set(tools))
    assert all(re.fullmatch(r"compozy__session_[a-z]+", tool) for tool in tools)
    # Which tools there are is docs/tools.md's table, checked against the table by tests/test_docs_tables.py.
    assert {"compozy__session_describe", "compozy__session_prompt"} <= set(tools)
