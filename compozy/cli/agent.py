"""`compozy agent list`, `compozy agent login`, and the hidden `compozy agent reference` (the built-in ACP
agent on stdio, used by the zipapp).

Layer 6 (surface). `agent login` runs on this machine, in this terminal: it reads the config.toml of this
home, as the daemon does, and starts the agent itself (a login is the user's, never the daemon's).
"""

import os

import click

from compozy.cli.main import cli
from compozy.cli.output import emit, output_option, quiet_option, table
from compozy.errors import CompozyError


@cli.group()
def agent():
    """The agents sessions run: list them (configure them in config.toml, see docs/agents.md).

    \b
    Example:
      compozy agent list
    """


@agent.command("list")
@quiet_option("agent names")
@output_option()
@click.pass_obj
def list_(obj, quiet, output):
    """The configured agents: provider, command (FOUND: on PATH), default runtime; * marks the default.

    \b
    Example:
      compozy agent list
      compozy agent list -o json
    """
    document = obj.call("agent.list")
    emit(document, output, lambda d: "\n".join(a["name"] for a in d["agents"]) if quiet else _agents_table(d))


def _agents_table(document):
    rows = [(a["name"] + (" *" if a["default"] else ""), a["provider"], "yes" if a["found"] else "NO",
             " ".join(f"{k}={v}" for k, v in a["runtime"].items() if k != "provider") or "-",
             " ".join(a["command"])) for a in document["agents"]]
    return table(rows, ("NAME", "PROVIDER", "FOUND", "RUNTIME", "COMMAND"), "no agents")


@agent.command("login")
@click.argument("name")
@click.option("--method", "method_id", metavar="ID", help="the auth method to use (default: the agent's only "
              "terminal method, or its only method)")
def login(name, method_id):
    """Log an agent in: run its terminal login here, or authenticate it once.

    NAME is an agent of config.toml (its provider is logged in) or a provider. A terminal method (ACP
    terminal authentication) runs the agent's own program with the method's arguments and environment
    in this terminal; any other method is sent to the agent's authenticate, which may open a browser.
    A refused prompt (provider_auth_failure) names the exact command to run.

    \b
    Example:
      compozy agent login codex
      compozy agent login claude --method claude-login
    """
    from compozy.acp import login as acp_login
    from compozy.paths import Home
    provider = _provider_of(name)
    home, cwd = str(Home().ensure().root), os.getcwd()
    methods = acp_login.offered_methods(provider, cwd, home)
    if not methods:
        click.echo(f"{name} needs no login: its agent offers no auth methods")
        return
    method = acp_login.pick(provider.name, methods, method_id)
    click.echo(f"logging {name} in with {method['name']} ({method['id']})...", err=True)
    if method["type"] == acp_login.TERMINAL:
        status = acp_login.run_in_terminal(provider, method, cwd, home)
        if status != 0:
            raise CompozyError("provider_auth_failure", f"the login of {name} with {method['id']!r} exited with "
                               f"status {status}", method=method["id"], exit_status=status)
    else:
        acp_login.authenticate_now(provider, method, cwd, home)
    click.echo(f"logged in: {name} ({method['id']}); prompt its sessions again")


def _provider_of(name):
    from compozy.cli.configuration import load_checked
    config, problems = load_checked()
    if problems:
        raise CompozyError("invalid_request", f"config.toml is not valid:\n{problems}")
    if name in config.agents:
        return config.provider(config.agents[name].provider)
    if config.provider(name) is not None:
        return config.provider(name)
    raise CompozyError("agent_not_found", f"no agent or provider named {name!r}; agents: {sorted(config.agents)}")


@agent.command("reference", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("launch_args", nargs=-1, type=click.UNPROCESSED)
def reference(launch_args):
    """Run the built-in reference ACP agent on stdin/stdout.

    \b
    Example:
      compozy agent reference < requests.jsonl
    """
    from compozy.agents.reference import main
    main(launch_args)
