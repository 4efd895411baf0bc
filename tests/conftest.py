"""Shared fixtures: a temporary COMPOZY_HOME, a workspace folder, a real daemon."""

# noqa: F401 (pytest finds fixtures by name)
from tests.harness.fixtures import api, daemon, home, no_illegal_transitions, port, served, workspace  # noqa: F401
