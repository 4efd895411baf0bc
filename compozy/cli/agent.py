"""`compozy agent list`, `add`, `doctor`, `login`, and the hidden `compozy agent reference` (the built-in ACP
agent on stdio, used by the zipapp).

Layer 6 (surface). `agent login` runs on this machine, in this terminal: it reads the config.toml of this
home, as the daemon does, and starts the agent itself (a login is the user's, never the daemon's). `agent add`
also works without a daemon: it edits this home's config.toml (and installs into its folder), as a person would.
`agent doctor` asks the daemon, which starts the agent as its sessions would (a long wait, exit 1 on a failed
step). `agent list` and `agent doctor` are generated from the table (compozy/cli/generated.py) with their words
here.
"""

import os

import click

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import cli
from compozy.cli.output import emit, output_option, table
from compozy.errors import CompozyError

DOCTOR_WAIT = 600.0  # the daemon bounds each step by the provider's own timeouts


@cli.group()
def agent():
    """The agents sessions run: list them (configure them in config.toml, see docs/agents.md).

    \b
    Example:
      compozy agent list
    """


def _agents_table(document):
    rows = [(a["name"] + (" *" if a["default"] else ""), a["provider"], "yes" if a["installed"] else "NO",
             " ".join(f"{k}={v}" for k, v in a["runtime"].items() if k != "provider") or "-",
             " ".join(a["command"]) + ("" if a["installed"] else f"  ({a['install_detail']})"))
            for a in document["agents"]]
    return table(rows, ("NAME", "PROVIDER", "INSTALLED", "RUNTIME", "COMMAND"), "no agents")


PRESENTATION["agent.list"] = Presentation(
    "The configured agents: provider, INSTALLED (its program found and runnable), runtime; * marks the default.\n\n"
    "An agent started through `npx -y PKG` is installed only when npm's cache holds PKG: npx would\n"
    "otherwise download it when a session first starts it (add it with --install to install it once).",
    "compozy agent list\ncompozy agent list -o json",
    lambda d, quiet: "\n".join(a["name"] for a in d["agents"]) if quiet else _agents_table(d), quiet="agent names")


@agent.command("add")
@click.argument("agent_id", metavar="ID")
@click.option("--registry", metavar="FILE|URL", help="the registry: a registry.json or agent.json file, a folder "
              "of <id>/agent.json, or a URL (default: the public ACP registry)")
@click.option("--name", help="the agent's (and provider's) name in config.toml (default: ID)")
@click.option("--install", is_flag=True, help="install the package now (npm for npx, uv or pip for uvx) or "
              "download and unpack the binary the registry names")
@click.option("--prefix", metavar="DIR", help="install under DIR/ID (default: $COMPOZY_HOME/agents/ID)")
@click.option("--distribution", type=click.Choice(("npx", "uvx", "binary")), help="which of the entry's "
              "distributions to use (default: npx, then uvx, then binary)")
@click.option("--auth-method", metavar="ID", help="set the provider's auth_method (authenticated before the "
              "first session)")
@click.option("--force", is_flag=True, help="replace an agent or provider of that name")
@output_option()
def add(agent_id, registry, name, install, prefix, distribution, auth_method, force, output):
    """Add an agent from the ACP registry to config.toml, pinned to the registry's version.

    Writes [providers.NAME] and [agents.NAME] at the end of config.toml (what the file held, comments
    included, stays), with the auth methods the agent declares as comments. Without --install an npx or
    uvx agent is fetched by npx or uvx when it first starts. Then `compozy daemon reload` makes a
    running daemon see it and `compozy agent doctor NAME` tries it.

    \b
    Example:
      compozy agent add qwen-code --install
      compozy agent add gemini --registry ./registry.json --name gem
      compozy agent add codex-acp --install --prefix ~/agents -o json
    """
    from compozy.location import child_environment
    from compozy.paths import Home
    from compozy.registry import adding, catalog
    home = Home().ensure()
    request = adding.Request(agent_id, registry or catalog.DEFAULT_URL, name, install, prefix, distribution,
                             auth_method, force)
    if install:
        click.echo(f"installing {agent_id}...", err=True)
    document = adding.add(request, home.config_file, home.root / "agents", child_environment(), _probe)
    emit(document, output, _added_text)


def _probe(provider):
    """The authMethods the installed agent declares: one initialize, in a scratch folder."""
    import tempfile
    from compozy.acp import login as acp_login
    from compozy.paths import Home
    with tempfile.TemporaryDirectory(prefix="compozy-add-") as scratch:
        return acp_login.offered_methods(provider, scratch, str(Home().ensure().root))


def _added_text(d):
    lines = [f"added agent {d['name']}: {d['title']} {d['version']} ({d['distribution']}) to {d['config_file']}",
             f"  command    {' '.join(d['command'])}",
             f"  installed  {'yes' if d['installed'] else 'no'} ({d['install_detail']})"]
    if d["auth_methods"]:
        lines.append("  auth       " + ", ".join(f"{m['id']} ({m.get('type') or 'agent'})" for m in d["auth_methods"]))
    lines.append(f"next: compozy daemon reload; compozy agent doctor {d['name']}")
    return "\n".join(lines)


def _doctor_text(d):
    report = d["doctor"]
    lines = [f"{report['agent']} (provider {report['provider']}): {'ok' if report['ok'] else 'FAILED'}",
             f"  command       {' '.join(report['command'])}"]
    for step in report["steps"]:
        seconds = f"{step['seconds']:.2f}s" if step.get("seconds") is not None else "-"
        detail = step.get("detail", "") if step["ok"] else "(the error below)"
        lines.append(f"  {step['step']:<13} {'ok  ' if step['ok'] else 'FAIL'} {seconds:>8}  {detail}")
    error = report.get("error")
    if error:
        lines.append(f"  error         {error['code']}: {error['message']}")
    lines += [f"  stderr        {line}" for line in report["stderr_tail"][-5:]]
    lines.append(f"  stopped       {'verified' if report['stopped'] else 'NOT VERIFIED: a process may be left'}")
    return "\n".join(lines)


PRESENTATION["agent.doctor"] = Presentation(
    "Start an agent in a scratch folder, as the daemon's sessions would, and report each step.\n\n"
    "It reports the launch time, the protocol version, capabilities, auth methods and whether\n"
    "authentication succeeds, the time to open a session, and the first error with its evidence (the\n"
    "agent's error data and its last stderr lines). The agent is stopped after; nothing is left running.\n"
    "Exits 1 when a step failed.",
    "compozy agent doctor claude\ncompozy agent doctor codex -o json", _doctor_text,
    metavars={"agent_name": "NAME"}, wait=DOCTOR_WAIT, succeeded=lambda d: d["doctor"]["ok"])


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
