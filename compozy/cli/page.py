"""`compozy open [SESSION]`: the web page, logged in through a one-time login URL.

Layer 6 (surface). The daemon mints the URL (`POST /api/login`, over the owner-only socket by
default); a browser that opens it gets the page's cookie and an address bar without the token.
"""

import os
import sys

import click

from compozy.api import OPS
from compozy.cli.client import request
from compozy.cli.main import cli
from compozy.cli.output import emit, output_option
from compozy.errors import CompozyError
from compozy.text import one_line


@cli.command("open")
@click.argument("session_id", required=False)
@click.option("--no-browser", is_flag=True, help="print the URL only, even where a browser could open it")
@output_option()
@click.pass_obj
def open_page(obj, session_id, no_browser, output):
    """Open the web page logged in: the session list, or one session's view.

    Prints a login URL that works once, for 10 minutes, and opens it in your browser when one is
    available (a graphical session, or $BROWSER); elsewhere, open the printed URL yourself, for
    example through an SSH tunnel to the daemon's port.

    \b
    Example:
      compozy open
      compozy open 01J9Z3K6 --no-browser
    """
    document = obj.call("daemon.login", session_id=session_id)
    url = document["login"]["url"]
    opened = not no_browser and output != "json" and open_in_browser(url)
    emit(document, output, lambda d: url)
    if opened:
        click.echo("opened in your browser (the URL above works once)", err=True)


def open_in_browser(url):
    """True when a browser took the URL. Only where a graphical one can run, or $BROWSER names one:
    elsewhere Python's webbrowser would start a text browser on this terminal."""
    if not (os.environ.get("BROWSER") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
            or sys.platform == "darwin"):
        return False
    import webbrowser
    try:
        return webbrowser.open(url)
    except webbrowser.Error as exc:
        click.echo(f"compozy: cannot open a browser ({one_line(str(exc))}); open the URL yourself", err=True)
        return False


def login_url(client):
    """A one-time login URL of the page from the daemon behind client, None when it serves no page."""
    method, path, _, body = request(OPS["daemon.login"], {})
    try:
        return client.call(method, path, body=body)[1]["login"]["url"]
    except CompozyError:
        return None
