"""Shared fixtures: a temporary COMPOZY_HOME, a workspace folder, a real daemon, headless Chromium, a PostgreSQL server."""

# noqa: F401 (pytest finds fixtures by name)
from tests.harness.fixtures import (api, chromium, daemon, home, no_illegal_transitions, port, postgres,  # noqa: F401
                                    served, workspace)
