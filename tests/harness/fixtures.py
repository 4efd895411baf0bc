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
