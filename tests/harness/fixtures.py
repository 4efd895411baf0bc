"""Fixtures shared by the test suite and the benchmarks: a temporary home, a workspace, a real daemon."""

import pytest

from tests.harness.daemon import DaemonProcess


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
