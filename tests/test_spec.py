"""Replays every scenario in spec/ on every surface: in-process, HTTP and CLI."""

import pytest

from tests.harness.runner import Run
from tests.harness.scenario import SURFACES, all_scenarios


def _cases():
    for scenario in all_scenarios():
        for surface in SURFACES:
            marks = []
            skip = scenario.skip or {}
            if surface not in scenario.surfaces:
                marks.append(pytest.mark.skip(reason=f"scenario runs on {scenario.surfaces} only"))
            elif surface in (skip.get("surfaces") or []):
                marks.append(pytest.mark.skip(reason=skip.get("reason", "no reason given")))
            yield pytest.param(scenario, surface, id=f"{scenario.id}[{surface}]", marks=marks)


@pytest.mark.parametrize("scenario,surface", list(_cases()))
def test_scenario(scenario, surface, tmp_path, request):
    # A scenario with `fleet:` joins a real PostgreSQL fleet (tests/harness/fleet.py); skipped where none can start.
    postgres = request.getfixturevalue("postgres") if scenario.data.get("fleet") else None
    Run(scenario, surface, tmp_path, postgres).execute()
