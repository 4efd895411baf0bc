"""`compozy mcp relay`: the native tool server over stdio, for agents that do not speak MCP over HTTP.

Layer 6 (surface). The daemon offers this command to such agents when it opens their ACP session.
"""

import os
import sys

import click

from compozy.api import SECRET_ENV
from compozy.cli.main import cli


@cli.group(hidden=True)
def mcp():
    """The native tool server for the agents the daemon binds.

    \b
    Example:
      compozy mcp relay
    """


@mcp.command("relay")
@click.pass_obj
def relay(obj):
    """Relay MCP over stdin/stdout to the daemon's tool server as the agent whose binding secret is in
    COMPOZY_BINDING_SECRET (the daemon launches agents with it).

    \b
    Example:
      compozy mcp relay < messages.jsonl
    """
    from compozy.cli.client import Client
    from compozy.cli.relay import relay as run
    secret = os.environ.get(SECRET_ENV)
    if not secret:
        click.echo(f"Error: invalid_request: {SECRET_ENV} is not set", err=True)
        sys.exit(1)
    sys.exit(run(Client(obj.client.url, timeout=None), secret))
