"""Shared fixtures: a temporary COMPOZY_HOME, a workspace folder, a real daemon."""

from tests.harness.fixtures import daemon, home, workspace  # noqa: F401 (pytest finds fixtures by name)
