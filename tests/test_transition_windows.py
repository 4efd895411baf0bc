"""No wedged sessions (issue 20): every input against every runtime transition window.

Each case holds one runtime transition window open with the reference agent's directives and gates
(tests/harness/windows.py), sends one input into it, alone or from two clients at once
(tests/harness/inputs.py), and checks the invariants of tests/harness/crossing.py: every request
answered within its bound with a named 4xx refusal at worst; no transitional state outliving its
bound; every admitted input run or visibly refused; one terminal event per turn; a later plain
prompt runs to done. Real daemons, real agents, real signals.

CI runs every window with two inputs (every input at least once, some of them twinned). The full
product, every window with every input alone and twinned, is opt-in:
    COMPOZY_LONG=1 [COMPOZY_WINDOWS_REPORT=cases.jsonl] python3 -m pytest -q -n 2 tests/test_transition_windows.py
"""

import json
import os
import uuid
from pathlib import Path

import pytest

from tests.harness.crossing import Case
from tests.harness.daemon import DaemonProcess
from tests.harness.inputs import INPUTS
from tests.harness.runner import kill_marked
from tests.harness.scenario import to_toml
from tests.harness.windows import DAEMON_CONFIGS, WINDOWS

LONG = os.environ.get("COMPOZY_LONG") == "1"


def _cases():
    if LONG:
        return [(w, i, twin) for w in WINDOWS for i in INPUTS for twin in (False, True)]
    picks = []
    for number, window in enumerate(WINDOWS):
        for offset in range(2):
            index = 2 * number + offset
            picks.append((window, INPUTS[index % len(INPUTS)], index % 3 == 2))
    return picks


CASES = _cases()


@pytest.fixture(scope="module")
def daemons(tmp_path_factory):
    """The shared daemons of the module, one per configuration, started when first needed; every agent
    they start carries the module's marker and none may outlive them."""
    marker = f"compozy-test-{uuid.uuid4().hex}"
    previous = os.environ.get("COMPOZY_TEST_MARK")
    os.environ["COMPOZY_TEST_MARK"] = marker
    started = {}

    def start(name, shared=True):
        if shared and name in started:
            return started[name]
        home = tmp_path_factory.mktemp(f"windows-{name}") / "home"
        home.mkdir()
        (home / "config.toml").write_text(to_toml(DAEMON_CONFIGS[name]))
        daemon = DaemonProcess(home).start()
        started[name if shared else f"{name}-{len(started)}"] = daemon
        return daemon
    try:
        yield start
    finally:
        for daemon in started.values():
            daemon.stop()
        if previous is None:
            os.environ.pop("COMPOZY_TEST_MARK", None)
        else:
            os.environ["COMPOZY_TEST_MARK"] = previous
        assert kill_marked(marker) == [], "agents outlived the window suite's daemons"


@pytest.mark.slow
@pytest.mark.parametrize("window,sent,twin", CASES,
                         ids=[f"{w.name}-{i.name}{'-twin' if t else ''}" for w, i, t in CASES])
def test_an_input_sent_into_an_open_window_keeps_every_invariant(daemons, tmp_path, window, sent, twin):
    daemon = daemons(window.daemon, shared=window.daemon != "boot")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    case = Case(daemon, workspace.resolve(), window)
    try:
        window.prepare(case)
        if sent.needs_other:
            case.other = case.must("session.create", workspace_path=str(case.workspace))
            case.run_turn("warm", case.other)
        try:
            window.open(case)
            read = case.read()
            case.at_input = f"{read['state']}/{read['runtime']['status']}"  # the window as the input met it
            sent.run(case, twin)
        finally:
            window.close(case)
        case.check()
    finally:
        _report(case, sent, twin)
        if window.daemon == "boot":
            daemon.stop()


def _report(case, sent, twin):
    path = os.environ.get("COMPOZY_WINDOWS_REPORT")
    if not path:
        return
    line = {"window": case.window.name, "input": sent.name, "twin": twin,
            "answers": [{"op": a.op, "surface": a.surface, "elapsed": round(a.elapsed, 3), "code": a.code,
                         "status": a.status, "hung": a.hung} for a in case.answers],
            "settled_after": round(getattr(case, "settled_after", -1.0), 3), "expected": len(case.expected),
            "checked": getattr(case, "checked", False), "at_input": getattr(case, "at_input", None)}
    with Path(path).open("a") as handle:
        handle.write(json.dumps(line) + "\n")
