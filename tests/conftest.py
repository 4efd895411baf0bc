"""Shared fixtures: a temporary COMPOZY_HOME, a workspace folder, a real daemon, headless Chromium."""

# noqa: F401 (pytest finds fixtures by name)
from tests.harness.fixtures import (api, chromium, daemon, home, no_illegal_transitions, port, served,  # noqa: F401
                                    workspace)
