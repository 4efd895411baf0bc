"""Shared fixtures: a temporary COMPOZY_HOME, a workspace folder, a real daemon."""

import os

import pytest

from tests.harness.daemon import DaemonProcess


@pytest.fixture
def home(tmp_path, monkeypatch):
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("COMPOZY_HOME", str(path))
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


def write_config(home, text):
    (home / "config.toml").write_text(text)
    return os.fspath(home / "config.toml")
