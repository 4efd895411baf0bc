"""The real `compozy` command for tests: in a pipe (subprocess) or on a pseudo-terminal (pexpect)."""

import io
import signal
import subprocess
import sys

import pexpect

from tests.harness.daemon import ENTRY, ROOT, test_environment

CLI_TIMEOUT = 60


def run_cli(home, *args, extra_env=None, input_text=None, timeout=CLI_TIMEOUT, cwd=ROOT):
    """`python3 compozy.py ARGS` with COMPOZY_HOME=home, stdout and stderr captured (not a terminal)."""
    return subprocess.run([sys.executable, ENTRY, *args], cwd=cwd, env=test_environment(home, extra_env),
                          input=input_text, capture_output=True, text=True, timeout=timeout)


def spawn_cli(home, *args, extra_env=None, timeout=CLI_TIMEOUT):
    """`compozy ARGS` on a pseudo-terminal, as a person runs it; the caller expects and sends.
    Everything it printed stays in child.logfile_read.getvalue()."""
    child = pexpect.spawn(sys.executable, [ENTRY, *args], cwd=str(ROOT), env=test_environment(home, extra_env),
                          encoding="utf-8", timeout=timeout, dimensions=(40, 200), preexec_fn=_as_a_shell_runs_it)
    child.logfile_read = io.StringIO()
    return child


def _as_a_shell_runs_it():
    """A person's shell runs a foreground command with SIGINT and SIGQUIT at their defaults. A test run
    started in the background of a non-interactive shell (`pytest ... &`, as some tools and CI runners
    start commands) ignores them instead, exec keeps an ignored signal ignored, and Python then installs
    no KeyboardInterrupt handler: Ctrl-C would never reach the CLI. That, not load, is what made the
    Ctrl-C tests time out in some full runs."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def interrupt(child, within=CLI_TIMEOUT * 3):
    """Ctrl-C, as typed: the CLI must take it (its SIGINT is not ignored: a clear failure otherwise,
    not a timeout), then its exit is waited for as long as a loaded machine needs."""
    ignored = _ignored_signals(child.pid)
    assert not ignored & (1 << (signal.SIGINT - 1)), f"the CLI ignores SIGINT (SigIgn {ignored:#x})"
    child.sendintr()
    child.expect(pexpect.EOF, timeout=within)
    child.close()
    return child


def _ignored_signals(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1], 16) for line in status if line.startswith("SigIgn:"))


def on_terminal(home, *args, extra_env=None):
    """(output, exit status) of `compozy ARGS` run to its end on a pseudo-terminal."""
    child = spawn_cli(home, *args, extra_env=extra_env)
    child.expect(pexpect.EOF)
    child.close()
    return child.before.replace("\r\n", "\n"), child.exitstatus


def cli_json(home, *args):
    """The -o json document of a command that must succeed."""
    import json
    result = run_cli(home, *args, "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)
