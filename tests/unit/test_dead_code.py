"""No dead code in compozy/: vulture at 60% confidence (it reports unused functions, methods,
classes, attributes, variables, imports and unreachable code) finds nothing outside the whitelist
of what is used dynamically (tests/unit/dead_code_whitelist.py) and the names dispatched by the
operation table, click, the reference agent's directives and peewee. Code used only by tests is
dead: tests do not count as users, so vulture reads compozy/ alone.
"""

from pathlib import Path

import pytest

from compozy.api import OPERATIONS

vulture = pytest.importorskip("vulture", reason="vulture is in the test extra (setup.cfg)")

ROOT = Path(__file__).resolve().parents[2]
MIN_CONFIDENCE = 60  # 60 is vulture's floor: below it nothing more is found, above it functions and attributes hide
DISPATCHED = [
    "do_*",  # the reference agent's directive steps, called by name (agents/directives.py)
    "Meta", "table_name", "database", "indexes", "primary_key", "singleton",  # peewee model options
    *{operation.facade for operation in OPERATIONS if operation.facade},  # the façade, called by the table
]
DECORATED = ["@cli.command", "@cli.group", "@*.command", "@*.group"]  # click registers the commands


def unused_code():
    finder = vulture.Vulture(ignore_names=DISPATCHED, ignore_decorators=DECORATED)
    finder.scavenge([str(ROOT / "compozy"), str(ROOT / "tests" / "unit" / "dead_code_whitelist.py")])
    return [f"{item.filename.relative_to(ROOT)}:{item.first_lineno}: {item.message} ({item.confidence}%)"
            for item in finder.get_unused_code(min_confidence=MIN_CONFIDENCE)]


def test_compozy_has_no_dead_code():
    assert unused_code() == [], "\n".join(unused_code())
