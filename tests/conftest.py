"""Shared fixtures: a temporary COMPOZY_HOME, a workspace folder, a real daemon."""

from tests.harness.fixtures import api, daemon, home, port, served, workspace  # noqa: F401 (pytest finds fixtures by name)
