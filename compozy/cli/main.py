"""`compozy`: the command-line client of the daemon.

Layer 6 (surface). Errors print `Error: <code>: <message>` on stderr and exit 1 (usage errors 2). The CLI never
imports the manager or the HTTP app; `daemon run` imports the daemon process lazily.
"""

import os
import re
import sys

import click

from compozy import __version__
from compozy.api import OPS
from compozy.errors import CompozyError
from compozy.text import one_line

PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
PROFILE_ENV = "COMPOZY_ACTIVE_PROFILE"  # set once a profile's home is in COMPOZY_HOME
PROFILE_HELP = ("a separate daemon and home under the main one ($COMPOZY_HOME/profiles/NAME), with its own "
                "sessions and config.toml")
USAGE_EXIT = 2  # a missing argument or an unknown flag, as click and most CLIs exit


class Context:
    def __init__(self, url):
        self.url = url
        self._client = None
        self._resolved = {}
        self.timeout = 60.0

    @property
    def client(self):
        if self._client is None:
            from compozy.cli.client import Client, resolve_url
            from compozy.paths import Home
            self._client = Client(resolve_url(self.url, Home()), timeout=self.timeout)
        return self._client

    def call(self, name, /, headers=None, **fields):
        """The document an operation of the table answers; None fields are left out."""
        method, path, query, body = self._request(name, fields)
        return self.client.call(method, path, body=body, query=query, headers=headers)[1]

    def file(self, name, /, **fields):
        """(media type, bytes) of an operation that answers a file (an export)."""
        method, path, query, _ = self._request(name, fields)
        return self.client.fetch(method, path, query=query)

    def stream(self, name, /, headers=None, **fields):
        """(event, data) pairs of an operation answered as Server-Sent Events."""
        method, path, query, body = self._request(name, fields)
        return self.client.stream(method, path, body=body, query=query, headers=headers)

    def _request(self, name, fields):
        from compozy.cli.client import request
        operation = OPS[name]
        self._resolve_prefixes(fields)
        if "workspace" in operation.path_params and fields.get("workspace") is None:
            # A session is addressed by its ID alone: one read learns its workspace.
            fields["workspace"] = self.call("session.get", session_id=fields["session_id"])["session"]["workspace_id"]
        return request(operation, fields)

    def resolve_session(self, typed):
        """The full session ID a typed unique prefix stands for (resolved once per command)."""
        from compozy.cli.prefixes import resolve
        if typed not in self._resolved:
            self._resolved[typed] = resolve(typed, self.call)
        return self._resolved[typed]

    def _resolve_prefixes(self, fields):
        from compozy.cli.prefixes import SESSION_FIELDS
        for field in SESSION_FIELDS:
            if fields.get(field) is not None:
                fields[field] = self.resolve_session(fields[field])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="COMPOZY_URL", help="daemon address: http://HOST:PORT or unix:///path "
              "(default: the home folder's socket)")
@click.option("--profile", envvar="COMPOZY_PROFILE", metavar="NAME", help=PROFILE_HELP + "; also accepted after "
              "any command")
@click.version_option(__version__, prog_name="compozy")
@click.pass_context
def cli(ctx, url, profile):
    """compozy: durable sessions for coding agents.

    \b
    Example:
      compozy daemon start
      compozy session prompt "$(compozy session new -q)" "hello"
      compozy session attach 01J9Z3K6
    """
    if profile:
        use_profile(profile)
    ctx.obj = Context(url)


_chosen_profile: list = []  # the profile this process points at, once chosen (top-level or on the command)


def use_profile(name):
    """Point this process (and the daemon it starts) at the profile's home, once: children inherit
    COMPOZY_HOME, not the profile name, so a profile never nests."""
    from compozy.paths import Home, make_private_dir
    if not PROFILE_NAME.fullmatch(name):
        raise click.BadParameter("use letters, digits, _ and - (at most 64)", param_hint="--profile")
    if _chosen_profile:
        if _chosen_profile[0] != name:
            raise click.UsageError(f"--profile {_chosen_profile[0]} and --profile {name}: give one profile")
        return
    _chosen_profile.append(name)
    profiles = make_private_dir(Home().root / "profiles")
    os.environ["COMPOZY_HOME"] = str(profiles / name)
    os.environ[PROFILE_ENV] = name
    os.environ.pop("COMPOZY_PROFILE", None)


def _profile_chosen(ctx, param, name):
    if name:
        use_profile(name)


def add_profile_option(group):
    """`--profile NAME` on every command as well, as the seed writes it (`compozy session stop --profile
    NAME ...`); it is eager, so defaults that depend on the profile (daemon start's port) see it."""
    for command in group.commands.values():
        grouped = isinstance(command, click.Group)
        if grouped:
            add_profile_option(command)
        if (not grouped or command.invoke_without_command) and \
                not any(param.name == "command_profile" for param in command.params):  # `inbox` is a command too
            command.params.append(click.Option(["--profile", "command_profile"], metavar="NAME", expose_value=False,
                                               is_eager=True, callback=_profile_chosen, help=PROFILE_HELP))


def commands():
    """The whole command tree: the hand-written commands, then one generated for every other operation of
    the table (compozy/cli/generated.py)."""
    from compozy.cli import (agent, attach, completion, configuration, daemon, derive, exporting, files,  # noqa: F401
                             finding, fleet, history, inbox, lifecycle, mcp, page, prompting, session, storage, usage,
                             workspace)
    from compozy.cli.generated import generate
    generate(cli)
    return cli


def main(argv=None):
    commands()
    add_profile_option(cli)
    try:
        code = cli.main(args=argv, prog_name="compozy", standalone_mode=False)
    except CompozyError as exc:
        click.echo(f"Error: {exc.code}: {one_line(exc.message)}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # Bad flags are bad input like any other: one error vocabulary on every surface.
        if exc.ctx is not None:
            click.echo(exc.ctx.get_usage(), err=True)
        click.echo(f"Error: invalid_request: {one_line(exc.format_message())}", err=True)
        sys.exit(USAGE_EXIT)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def choice(name, field):
    """The values the operation table allows for a field, as a click choice."""
    operation = OPS[name]
    spec = operation.body if field in (operation.body or {}) else operation.query
    return click.Choice(list(spec[field].choices))
