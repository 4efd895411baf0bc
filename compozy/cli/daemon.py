"""`compozy daemon run|start|stop|status`.

Layer 6 (surface). `run` imports the daemon process inside the function so the client stays light.
"""

import os
import signal
import subprocess
import sys
import time

import click

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import PROFILE_ENV, cli
from compozy.cli.output import emit, output_option
from compozy.errors import CompozyError

START_TIMEOUT = 30.0
STOP_TIMEOUT = 120.0


@cli.group()
def daemon():
    """Run, start, stop and inspect the compozy daemon.

    \b
    Example:
      compozy daemon start && compozy daemon status
    """


def _default_http():
    """Where the daemon listens when neither --http nor `[daemon] http` says: a profile's daemon runs
    beside the main one, so it takes a free port (written in its daemon.json)."""
    return "127.0.0.1:0" if os.environ.get(PROFILE_ENV) else "127.0.0.1:2123"


def listen_options(command):
    """The listening flags `run` takes; `start` takes the same and hands them to the `run` it spawns."""
    options = [
        click.option("--http", "http_addr", help="loopback HOST:PORT to serve HTTP on; port 0 picks a free port "
                     "(default: `[daemon] http` in config.toml, else 127.0.0.1:2123; a profile: port 0)"),
        click.option("--socket", "socket_path", type=click.Path(dir_okay=False), help="Unix socket path "
                     "(default: the home folder's daemon.sock)"),
        click.option("--no-http", is_flag=True, help="serve the Unix socket only"),
        click.option("--allow-remote", is_flag=True, help="allow a non-loopback --http address (needs a token)"),
        click.option("--token", envvar="COMPOZY_TOKEN", help="bearer token required with --allow-remote "
                     "(prefer the COMPOZY_TOKEN environment variable or --token-file: argv is visible to other users)"),
        click.option("--token-file", type=click.Path(dir_okay=False), help="read the bearer token from this file "
                     "(its first line), instead of --token"),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@daemon.command("run")
@listen_options
def run(http_addr, socket_path, no_http, allow_remote, token, token_file):
    """Run the daemon in the foreground until SIGTERM or SIGINT.

    \b
    Example:
      compozy daemon run --http 127.0.0.1:0
    """
    from compozy.config import ConfigError
    from compozy.paths import Home, UnsafeHome
    from compozy.daemon.process import Daemon, DaemonError
    token = _token(token, token_file)
    _refuse_remote_without_token(allow_remote, token)
    try:
        daemon_process = Daemon(Home(), http_addr, socket_path, no_http, token, allow_remote,
                                default_http=_default_http())
        code = daemon_process.run(announce=lambda line, flush=True: click.echo(line))
    except (DaemonError, ConfigError, UnsafeHome) as exc:
        click.echo(f"compozy daemon: {exc}", err=True)
        sys.exit(1)
    sys.exit(code)


@daemon.command("start")
@listen_options
@output_option()
def start(output, http_addr, socket_path, no_http, allow_remote, token, token_file):
    """Start the daemon in the background and wait until it is ready (takes the flags of `run`).

    A daemon already running on this home is not an error: it is reported and left alone.

    \b
    Example:
      compozy daemon start --http 127.0.0.1:2123
      compozy daemon start --no-http --socket "$XDG_RUNTIME_DIR/compozy.sock"
    """
    from compozy.location import child_environment, self_command
    home = _private_home()
    token = _token(token, token_file)
    _refuse_remote_without_token(allow_remote, token)
    running = running_daemon(home)
    if running:
        emit(_with_login({**running, "already_running": True}), output,
             lambda i: f"compozy daemon already running (pid {i['pid']}) at {i.get('http') or i['socket']}"
                       + _login_line(i))
        return
    argv = ["daemon", "run", *(["--http", http_addr] if http_addr else []), *(["--socket", socket_path] if socket_path else []),
            *(["--no-http"] if no_http else []), *(["--allow-remote"] if allow_remote else [])]
    # The token goes in the environment, never argv, where any local user could read it.
    secret = {"COMPOZY_TOKEN": token} if token else {}
    log_path = home.logs_dir / "daemon.out"
    with open(os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
        os.fchmod(log.fileno(), 0o600)  # owner-only like everything in the home, even if it was made 0644
        offset = log.tell()
        child = subprocess.Popen(self_command(*argv), env=child_environment(secret), stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, start_new_session=True)
    _wait_ready(home, child, log_path, offset, output)


def _private_home():
    from compozy.paths import Home, UnsafeHome
    try:
        return Home().ensure()
    except UnsafeHome as exc:
        click.echo(f"compozy daemon: {exc}", err=True)
        sys.exit(1)


def _token(token, token_file):
    """--token (or COMPOZY_TOKEN), else the first line of --token-file."""
    if token or not token_file:
        return token
    try:
        with open(token_file, encoding="utf-8") as handle:
            return handle.readline().strip() or None
    except OSError as exc:
        click.echo(f"compozy daemon: cannot read --token-file {token_file}: {exc.strerror}", err=True)
        sys.exit(1)


def _refuse_remote_without_token(allow_remote, token):
    # A refusal of the daemon's exposure, like a non-loopback address without --allow-remote: exit 1.
    if allow_remote and not token:
        click.echo("compozy daemon: --allow-remote needs a token (COMPOZY_TOKEN, --token-file or --token)", err=True)
        sys.exit(1)


def running_daemon(home):
    """daemon.json of the daemon running on this home, or None. Its pid must hold the home's lock: a
    daemon.json left by a crash, whose pid the kernel has given to another process, does not count."""
    from compozy.paths import lock_holder, read_daemon_file
    info = read_daemon_file(home)
    if not info or not isinstance(info.get("pid"), int) or not _alive(info["pid"]):
        return None
    try:
        return info if lock_holder(home.lock_file) == info["pid"] else None
    except OSError:
        return None  # no lock file, or the kernel does not say: no proof, so not ours


def _wait_ready(home, child, log_path, offset, output):
    from compozy.paths import read_daemon_file
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        info = read_daemon_file(home)
        if info and info.get("pid") == child.pid:
            emit(_with_login(info), output, lambda i: f"compozy daemon listening on {i.get('http') or '-'} socket "
                                                      f"{i['socket']} (pid {i['pid']})" + _login_line(i))
            return
        if child.poll() is not None:
            click.echo(_written_since(log_path, offset).rstrip() or f"compozy daemon: failed to start; see {log_path}",
                       err=True)
            sys.exit(1)
        time.sleep(0.05)
    click.echo(f"compozy daemon: not ready after {START_TIMEOUT:.0f}s; see {log_path}", err=True)
    sys.exit(1)


@daemon.command("stop")
@output_option()
def stop(output):
    """Stop the running daemon gracefully (live sessions go through the stop ladder).

    \b
    Example:
      compozy daemon stop
    """
    from compozy.paths import Home
    from compozy.paths import read_daemon_file
    home = Home()
    info = read_daemon_file(home)
    if not info or not _alive(info["pid"]):
        raise CompozyError("daemon_unavailable", "no compozy daemon is running (start one with `compozy daemon start`)")
    _signal_the_daemon(home, info["pid"], signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while _alive(info["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(info["pid"]):
        click.echo(f"compozy daemon: pid {info['pid']} still running after {STOP_TIMEOUT:.0f}s", err=True)
        sys.exit(1)
    emit({"stopped": True, "pid": info["pid"]}, output, lambda d: f"compozy daemon stopped (pid {d['pid']})")


def _signal_the_daemon(home, pid, sig):
    """sig to pid only if it is this home's daemon: the holder of the home's lock. The pidfd taken first
    pins that process, so a pid reused after a crash (daemon.json left behind) is never signalled. Every
    signal the CLI sends goes through here."""
    from compozy.paths import lock_holder
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        raise CompozyError("daemon_unavailable", "no compozy daemon is running") from None
    try:
        holder = lock_holder(home.lock_file)
        if holder != pid:
            raise CompozyError("daemon_unavailable", f"no compozy daemon is running: {home.daemon_file} names pid {pid}, "
                               f"which does not hold {home.lock_file} (a stale file; nothing was signalled)")
        signal.pidfd_send_signal(handle, sig)
    except OSError as exc:
        raise CompozyError("daemon_unavailable", f"cannot confirm that pid {pid} is this home's daemon "
                           f"({exc.strerror}); nothing was signalled") from None
    finally:
        os.close(handle)


@daemon.command("reload")
@output_option()
def reload(output):
    """Re-read config.toml (as SIGHUP does): new sessions see it, live sessions keep their binding.

    The file is checked first, as `compozy config check` does; an invalid one is reported and the
    daemon keeps its running configuration.

    \b
    Example:
      compozy daemon reload
    """
    from compozy.cli.configuration import load_checked
    from compozy.paths import Home, read_daemon_file
    home = Home()
    info = read_daemon_file(home)
    if not info or not _alive(info["pid"]):
        raise CompozyError("daemon_unavailable", "no compozy daemon is running (start one with `compozy daemon start`)")
    _, problems = load_checked()
    if problems:
        click.echo(problems, err=True)
        sys.exit(1)
    before = info.get("config_loaded_at"), info.get("config_failed_at")
    _signal_the_daemon(home, info["pid"], signal.SIGHUP)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        now = read_daemon_file(home) or {}
        if (now.get("config_loaded_at"), now.get("config_failed_at")) != before:
            if now.get("config_error"):
                click.echo(now["config_error"], err=True)
                sys.exit(1)
            emit(now, output, lambda d: f"compozy daemon (pid {d['pid']}) reloaded {home.config_file}")
            return
        time.sleep(0.05)
    click.echo(f"compozy daemon: pid {info['pid']} did not reload within {START_TIMEOUT:.0f}s", err=True)
    sys.exit(1)


@daemon.command("status")
@output_option()
@click.pass_obj
def status(obj, output):
    """Report whether a daemon answers, with its pid, addresses and version.

    \b
    Example:
      compozy daemon status -o json
    """
    from compozy.paths import Home
    from compozy.paths import read_daemon_file
    info = read_daemon_file(Home()) or {}
    try:
        health = obj.call("daemon.health")
    except CompozyError as exc:
        if exc.code != "daemon_unavailable":
            raise  # a daemon answered, and refused (unauthorized without its token): say so
        emit({"running": False, **info}, output, lambda d: "compozy daemon: not running")
        sys.exit(1)
    document = {"running": True, **info, "version": health.get("version")}
    emit(document, output, lambda d: f"compozy daemon running (pid {d.get('pid')}) http {d.get('http')} "
                                     f"socket {d.get('socket')} version {d.get('version')}")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        return data[data.rindex(b")") + 2:data.rindex(b")") + 3] == b"Z"
    except (OSError, ValueError):
        return False


def _with_login(info):
    """daemon.json plus a one-time login URL of the page (none without HTTP), asked over the socket."""
    from compozy.cli.client import Client
    from compozy.cli.page import login_url
    url = login_url(Client("unix://" + info["socket"], timeout=10)) if info.get("http") else None
    return {**info, "login_url": url}


def _login_line(info):
    return f"\nopen the page (this link works once): {info['login_url']}" if info.get("login_url") else ""


def _written_since(path, offset):
    """What the failed daemon itself wrote (its own error line), not the log of earlier runs."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read()[-4000:].decode("utf-8", "replace")


PRESENTATION["daemon.status"] = Presentation(
    "The daemon at a glance: sessions by state and the ones with a failure or attention.",
    text=lambda d: _status_text(d))


def _status_text(document):
    status = document["status"]
    counts = ", ".join(f"{n} {state}" for state, n in sorted(status["sessions"].items())) or "no sessions"
    lines = [f"compozy {status['version']}: {counts}; {status['live']} live in this daemon"]
    for session in status["attention"]:
        failure, stuck = session.get("failure") or {}, session.get("stuck")
        detail = _stuck_text(stuck) if stuck else failure.get("summary") or session.get("stop_detail") or ""
        lines.append(f"  {session['id']}  {session['state']}  {session.get('attention') or failure.get('kind')}: "
                     f"{detail}")
    for item in status.get("daemon_attention", []):  # the daemon's own, not a session's: the disk budget
        lines.append(f"  {item['kind']}: {item['summary']}")
    return "\n".join(lines + _inbox_lines(status))


def _inbox_lines(status):
    """The inbox's open items by kind and session, and the newest notifier runs."""
    inbox, lines = status.get("inbox") or {}, []
    if inbox.get("total"):
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(inbox["by_kind"].items()))
        lines.append(f"inbox: {inbox['total']} open ({kinds}); `compozy inbox` lists them")
        lines += [f"  {sid}  {n} in the inbox" for sid, n in sorted(inbox["by_session"].items())]
    for run in status.get("notifier_runs") or []:
        outcome = run.get("skipped") or ("timed out" if run.get("timed_out") else f"exit {run.get('exit_code')}")
        lines.append(f"notifier  {run['started_at'][:19]}  {run['item_id']}  {run['kind']}: {outcome}")
    return lines


def _stuck_text(stuck):
    return f"runtime {stuck['status']} for {_seconds(stuck['seconds'])} (bound {_seconds(stuck['bound_seconds'])})"


def _seconds(seconds):
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
