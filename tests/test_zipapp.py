"""The single-file install: dist/compozy.pyz runs the daemon on a bare Python.

The archive is built with the README's command (tools/build_pyz.py) and, when shiv is installed,
with the documented shiv command; each is run by a venv created --without-pip, started with -I
and a scrubbed environment, so only the archive and the standard library can be imported.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT = 300
CLI_TIMEOUT = 60
PIP_FAILED = 3  # tools/build_pyz.py's exit status when no package index answers
APSCHEDULER_IMPORT = ("apscheduler/__init__.py", "apscheduler/schedulers/base.py")
# psycopg, the fleet's PostgreSQL driver (an extra: `compozy[fleet]`), reads its version once at import, with a
# fallback; peewee imports it whenever it is installed, fleet or not (docs/fleet.md).
PSYCOPG_IMPORT = ("psycopg/version.py", "psycopg_binary/version.py")

METADATA_PROBE = """
import importlib.metadata, json, os, signal, sys, threading, time, traceback

callers = set()

def recorded(real):
    def lookup(*args, **kwargs):
        outside = [f.filename for f in traceback.extract_stack() if "importlib" not in f.filename
                   and f.filename != "<string>"]  # this probe's own frames
        callers.add(outside[-1])
        return real(*args, **kwargs)
    return lookup

for name in ("entry_points", "version", "distribution", "distributions", "metadata", "files", "requires"):
    setattr(importlib.metadata, name, recorded(getattr(importlib.metadata, name)))

def stop_when_ready():
    while not os.path.exists(os.path.join(os.environ["COMPOZY_HOME"], "daemon.json")):
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=stop_when_ready, daemon=True).start()
from compozy.cli.main import main
try:
    main(["daemon", "run", "--http", "127.0.0.1:0"])
finally:
    print(json.dumps(sorted(callers)))
"""


def bare_environment(home, extra=None):
    """No PYTHON* variables, no COMPOZY_URL: the daemon's children must not find the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "COMPOZY_URL"}
    env.update({"COMPOZY_HOME": str(home), **(extra or {})})
    return env


def test_only_apschedulers_import_consults_package_metadata(tmp_path):
    """At import APScheduler reads its version (with a fallback) and plugin tables we never use, and psycopg (when
    installed) its version; nothing else, from import to a ready daemon, asks installed-package metadata."""
    env = {**bare_environment(tmp_path / "home"), "PYTHONPATH": str(ROOT)}
    probe = subprocess.run([sys.executable, "-c", METADATA_PROBE], env=env, capture_output=True, text=True,
                           timeout=CLI_TIMEOUT)
    assert probe.returncode == 0, probe.stderr
    callers = json.loads(probe.stdout.splitlines()[-1])
    assert [c for c in callers if not c.endswith(APSCHEDULER_IMPORT + PSYCOPG_IMPORT)] == []


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory):
    """A Python with nothing but the standard library: a venv without pip."""
    folder = tmp_path_factory.mktemp("bare-venv")
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    assert subprocess.run([python, "-I", "-c", "import flask"], capture_output=True).returncode != 0
    return python


@pytest.fixture(scope="module")
def stdlib_archive(tmp_path_factory):
    output = tmp_path_factory.mktemp("zipapp") / "compozy.pyz"
    build = subprocess.run([sys.executable, "tools/build_pyz.py", "--output", str(output)], cwd=ROOT,
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if build.returncode == PIP_FAILED:
        pytest.skip(f"pip cannot install the runtime dependencies here: {build.stderr[-400:]}")
    assert build.returncode == 0, build.stderr
    return output


@pytest.fixture(scope="module")
def shiv_archive(tmp_path_factory):
    pytest.importorskip("shiv", reason="shiv is not installed (pip install shiv)")
    folder = tmp_path_factory.mktemp("shiv")
    source = folder / "source"  # a copy, so pip's in-tree build leaves nothing in the checkout
    shutil.copytree(ROOT / "compozy", source / "compozy", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("compozy.py", "setup.cfg", "pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, source / name)
    output = folder / "compozy.pyz"
    build = subprocess.run([sys.executable, "-m", "shiv", "-e", "compozy.cli.main:main", "-o", str(output), "."],
                           cwd=source, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if build.returncode and "No matching distribution" in build.stdout + build.stderr:
        pytest.skip(f"pip cannot install the runtime dependencies here: {build.stderr[-400:]}")
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    return output


@pytest.mark.slow
def test_archive_holds_python_source_only(stdlib_archive):
    with zipfile.ZipFile(stdlib_archive) as archive:
        names = archive.namelist()
        main = archive.read("__main__.py")
    assert main == (ROOT / "compozy.py").read_bytes()
    assert "compozy/agents/reference.py" in names and "flask/app.py" in names
    assert [n for n in names if n.endswith((".so", ".pyd", ".dylib"))] == []
    assert [n for n in names if ".dist-info/" in n or "__pycache__" in n] == []
    assert any(n.startswith("licenses/flask-") for n in names)


@pytest.mark.slow
def test_stdlib_zipapp_runs_the_daemon_on_a_bare_python(stdlib_archive, bare_python, tmp_path):
    exercise_daemon([bare_python, "-I", stdlib_archive], tmp_path)


@pytest.mark.slow
def test_shiv_archive_runs_the_daemon_on_a_bare_python(shiv_archive, bare_python, tmp_path):
    exercise_daemon([bare_python, "-I", shiv_archive], tmp_path, {"SHIV_ROOT": str(tmp_path / "shiv-cache")})


def exercise_daemon(archive_command, tmp_path, extra_env=None):
    """daemon start, a session, a prompt the reference agent answers, a native tool it calls through
    the stdio relay (the archive relaunched), the page, daemon stop."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    env = bare_environment(home, {"COMPOZY_REFERENCE_NO_MCP_HTTP": "1", **(extra_env or {})})

    def compozy(*args):
        done = subprocess.run([*map(str, archive_command), *args], cwd=workspace, env=env, capture_output=True,
                              text=True, timeout=CLI_TIMEOUT)
        assert done.returncode == 0, f"compozy {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done.stdout

    daemon = json.loads(compozy("daemon", "start", "--http", "127.0.0.1:0", "-o", "json"))
    try:
        session_id = compozy("session", "new", "-q").strip()
        assert compozy("session", "prompt", session_id, "hello from the archive").strip() == "echo: hello from the archive"
        agent_pid = json.loads(compozy("session", "status", session_id, "-o", "json"))["session"]["runtime"]["process"]["pid"]
        python, *rest = map(str, archive_command)  # relaunched with -P: never from the current folder
        assert agent_command(agent_pid) == [python, "-P", *rest, "agent", "reference"]
        described = compozy("session", "prompt", session_id, "[mcp compozy__session_describe]")
        assert f'mcp compozy__session_describe: {{"session":{{"id":"{session_id}"' in described
        if (ROOT / "compozy" / "web").is_dir():  # logged in through the URL daemon start printed, as a browser
            browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
            with browser.open(daemon["login_url"], timeout=CLI_TIMEOUT) as page:
                assert page.status == 200 and page.headers.get_content_type() == "text/html"
                assert page.url == daemon["http"] + "/"  # redirected, the token gone from the address
        compozy("daemon", "stop")
    finally:
        stop_if_running(daemon["pid"])


def agent_command(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().decode().split("\0")[:-1]


def stop_if_running(pid):
    """After a failed step: SIGTERM runs the graceful shutdown, which stops the agent too."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
