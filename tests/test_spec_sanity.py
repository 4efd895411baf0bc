"""The scenario suite lints itself: valid files, unique ids, and nothing left uncovered."""

import re

import pytest

from compozy.api import OPERATIONS, TOOLS
from compozy.states import MACHINES
from tests.harness.commands import cli_commands
from tests.harness.ops import OPS
from tests.harness.scenario import (EXPECT_KEYS, STEP_KEYS, SURFACES, TOP_KEYS, all_scenarios, strip_lines)

SCENARIOS = all_scenarios()
# Exercised by dedicated tests instead of scenarios, each for the reason given.
ROUTES_TESTED_ELSEWHERE = {
    "daemon.health": "tests/test_daemon.py polls it to know the daemon is ready",
    "daemon.openapi": "tests/test_openapi.py checks the document against the route table",
    "session.stream": "tests/test_streams.py follows SSE with real viewers, resume and keepalive",
    "session.catalog_stream": "tests/test_streams.py follows catalog changes",
    "attention.stream": "tests/test_attention.py follows the inbox: snapshot, changes, resume after a restart",
    "daemon.login": "tests/test_auth.py mints login URLs over TCP, the socket and `compozy open`, and redeems each in "
                    "a page request, once: what a login token is for, no scenario step can do (the façade has none)",
}
BOOT_REPAIR_TEST = ("tests/test_boot_repair.py writes the state a daemon killed at that moment leaves and boots on "
                    "it; a scenario can kill the daemon only between steps, never mid-bind or mid-dispatch")
TRANSITIONS_TESTED_ELSEWHERE = {
    "starting->stopping": "tests/test_stop_and_recovery.py stops a session from a second thread while its "
                          "restoring prompt is still binding; a prompt step only returns after the bind",
    "runtime:reconfiguring->unbound": "tests/test_stop_and_recovery.py stops a session while a slow replacement "
                                      "agent is still starting; a prompt step only returns after the bind",
    **{edge: BOOT_REPAIR_TEST for edge in (
        "boot:starting->stopped", "boot:stopping->stopped", "boot:runtime:binding->unbound",
        "boot:runtime:reconfiguring->unbound", "boot:runtime:recovering->unbound", "boot:queue:dispatching->sent",
        "boot:queue:dispatching->queued", "boot:admission:binding->withdrawn",
        "boot:admission:binding->started", "boot:interaction:pending->orphaned")},
    "derivation:creating->withdrawn": "tests/test_derive.py makes the session store fail while a continue writes "
                                      "its new session; no scenario can make a disk fail",
    **{edge: "tests/test_derive.py writes the rows a daemon killed mid-creation leaves and boots on them"
       for edge in ("boot:derivation:creating->created", "boot:derivation:creating->withdrawn")},
    "boot:active->stopping": "tests/test_partial_identity.py writes a partial agent identity naming a live process "
                             "into meta.json and boots on it; a scenario cannot edit meta.json between steps",
    "boot:rewind:pending->completed": "tests/test_boot_repair.py writes a rewind receipt a daemon killed mid-rewind "
                                      "leaves, before and after the archive, and boots on it",
}
CLI_TESTED_ELSEWHERE = {
    "daemon run": "tests/test_daemon.py starts the real daemon in the foreground",
    "daemon start": "tests/test_daemon.py starts it in the background and waits for ready",
    "daemon stop": "tests/test_daemon.py stops it gracefully",
    "daemon status": "tests/test_daemon.py reads it while running and after stop",
    "agent reference": "every scenario launches the reference agent through the daemon",
    "session attach": "tests/test_cli_attach.py drives it through a pseudo-terminal against a real daemon",
    "open": "tests/test_auth.py prints and opens (through $BROWSER) a login URL and logs a page in with it",
    "completion": "tests/test_cli_prefixes_completion.py loads the scripts and asks the completion protocol",
    "config check": "tests/test_cli_agents.py checks valid, invalid and missing files",
    "daemon reload": "tests/test_cli_agents.py reloads a running daemon by the command and by SIGHUP",
    "mcp relay": "spec/tools/tools-stdio-relay.yaml has the agent launch it; tests/test_tool_server.py drives it "
                 "with the official MCP client",
    "agent add": "tests/test_agent_registry.py adds agents from a registry file in the registry's format (npx, "
                 "binary and npm installs from loopback servers) and its errors (an edit of config.toml on this "
                 "machine, not an operation of the daemon)",
    "agent login": "tests/test_agent_evidence.py logs the reference agent in by its terminal and agent-type methods "
                   "(a person's act on this machine, not an operation of the daemon)",
}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id or str(s.path))
def test_scenario_file_is_well_formed(scenario):
    data = scenario.data
    assert set(data) - {"__line__"} <= TOP_KEYS, f"{scenario.path}: unknown keys {set(data) - TOP_KEYS}"
    assert scenario.id == scenario.path.stem, f"{scenario.path}: id must equal the file name"
    description = data.get("description", "")
    assert 0 < len(description) < 100 and not re.search(r"\bshould\b", description), scenario.path
    assert data.get("covers"), f"{scenario.path}: covers is empty"
    assert set(scenario.surfaces) <= set(SURFACES)
    if scenario.skip:
        assert scenario.skip.get("reason"), f"{scenario.path}: a skip needs a reason"
    for step in (data.get("steps") or []) + (data.get("finally") or []):
        _check_step(scenario, step)


def _check_step(scenario, step):
    where = f"{scenario.path}:{step.get('__line__')}"
    kinds = [k for k in STEP_KEYS if k in step]
    assert len(kinds) == 1, f"{where}: a step has exactly one kind, got {kinds}"
    assert set(step) - {"__line__"} <= STEP_KEYS[kinds[0]], f"{where}: unknown step keys"
    if "surfaces" in step:
        assert step.get("note"), f"{where}: a step limited to some surfaces needs a note saying why"
    if kinds[0] == "do":
        assert step["do"] in OPS, f"{where}: unknown op {step['do']}"
        assert set(strip_lines(step.get("expect") or {})) <= EXPECT_KEYS, f"{where}: unknown expect keys"


def test_scenario_ids_are_unique():
    ids = [s.id for s in SCENARIOS]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]


def _covered():
    return {item for scenario in SCENARIOS for item in scenario.data.get("covers") or []}


def test_every_operation_has_a_scenario():
    assert set(OPS) - _covered() - set(ROUTES_TESTED_ELSEWHERE) == set()


def test_every_route_has_a_scenario_or_a_dedicated_test():
    missing = {op.name for op in OPERATIONS} - _covered() - set(ROUTES_TESTED_ELSEWHERE)
    assert missing == set()


def test_every_cli_command_has_a_scenario_or_a_dedicated_test():
    covered_ops = _covered()
    exercised = {op.cli.command for name, op in OPS.items() if name in covered_ops and op.cli}
    missing = set(cli_commands()) - exercised - set(CLI_TESTED_ELSEWHERE)
    assert missing == set()


def test_every_native_tool_has_a_scenario_that_calls_it_through_an_agent():
    """`tool:<name>` in covers: the reference agent calls the tool ([mcp NAME {...}]) in that scenario."""
    covered = {item.removeprefix("tool:") for item in _covered() if item.startswith("tool:")}
    assert set(TOOLS) - covered == set()
    assert covered - set(TOOLS) == set()


def _edges():
    return set().union(*(machine.edge_names() for machine in MACHINES))


def test_every_edge_of_every_state_table_has_a_scenario_or_a_dedicated_test():
    """Lifecycle, runtime status, turn phase, queue entry and admission edges, and the boot repairs."""
    assert _edges() - _covered() - set(TRANSITIONS_TESTED_ELSEWHERE) == set()


def test_every_edge_named_is_an_edge_of_a_table():
    named = {item for item in _covered() if "->" in item} | set(TRANSITIONS_TESTED_ELSEWHERE)
    assert named - _edges() == set()


def test_every_cli_command_has_help():
    for path, command in cli_commands().items():
        assert command.help, f"compozy {path} has no help text"
