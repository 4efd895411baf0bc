"""Fixtures shared by the test suite and the benchmarks: a temporary home, a workspace, a real daemon, headless
Chromium for the browser tests (tests/harness/web.py), and a real PostgreSQL server for the fleet's tests and
scenarios (tests/harness/postgres.py)."""

import logging

import pytest

from tests.harness import browser, transitions
from tests.harness.daemon import DaemonProcess
from tests.harness.postgres import PostgresServer, unavailable


@pytest.fixture(autouse=True)
def no_illegal_transitions(request):
    """Fails a test after which any daemon it ran (in a subprocess or in this process) logged an illegal
    state transition, but the ones the test's `illegal_transitions` mark names."""
    tmp_path = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    watch = transitions.RecordWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    try:
        yield
    finally:
        root.removeHandler(watch)
    marker = request.node.get_closest_marker("illegal_transitions")
    allowed = set(marker.args) if marker else set()
    found = transitions.unexpected(watch.found + transitions.daemon_log_findings(tmp_path), allowed)
    assert not found, "a daemon logged an illegal state transition:\n" + "\n".join(found[:10])


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("COMPOZY_HOME", str(path))
    monkeypatch.delenv("COMPOZY_URL", raising=False)
    return path


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def daemon(home):
    process = DaemonProcess(home).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory, request):
    """One real daemon for a whole test module; every test makes its own sessions."""
    daemon = DaemonProcess(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]) / "home")
    try:
        yield daemon.start()
    finally:
        daemon.stop()


@pytest.fixture
def api(served):
    return served.client(timeout=60)


@pytest.fixture
def port(served):
    return int(served.http_url.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def chromium():
    """Headless Chromium for one test module (launched once; each test opens its own context)."""
    from playwright.sync_api import expect, sync_playwright

    from tests.harness.web import WAIT_MS
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        instance = browser.launch(playwright)
        yield instance
        instance.close()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for this test process (each test takes a fresh database of it); skipped, with the
    reason, where none can be started."""
    reason = unavailable()
    if reason:
        pytest.skip(f"no PostgreSQL for the fleet: {reason}")
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.close()
