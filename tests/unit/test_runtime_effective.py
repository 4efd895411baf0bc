"""runtime.effective describes the process serving the session: every runtime status without one
clears it (a failed retire included, whose process identity is kept until its exit is proven), and
last_known keeps what ran. The real paths (idle release, an exit outside a turn) are the scenarios
spec/lifecycle/idle-release-rebinds-with-load.yaml and runtime-effective-follows-the-process.yaml."""

from types import SimpleNamespace

import pytest

from compozy.session.records.live import LiveSession
from compozy.session.records.record import RuntimeRecord

SERVING = RuntimeRecord(status="ready", effective={"provider": "reference", "model": "echo-1"},
                        last_known={"provider": "reference", "model": "echo-1"},
                        process={"pid": 4242, "start_time": 7})


def changed(runtime, **fields):
    return LiveSession.runtime_with(SimpleNamespace(record=SimpleNamespace(runtime=runtime)), **fields)


def test_a_failed_retire_keeps_the_process_identity_but_not_effective():
    retired = changed(SERVING, status="unbound", transition="")  # the exit was not proven: process stays
    assert retired.effective is None and retired.process == SERVING.process
    assert retired.last_known == SERVING.last_known


@pytest.mark.parametrize("status", ["unbound", "recovering"])
def test_a_status_without_a_process_clears_effective(status):
    assert changed(SERVING, status=status).effective is None


@pytest.mark.parametrize("status", ["reconfiguring", "ready"])
def test_a_status_with_a_process_keeps_effective(status):
    assert changed(SERVING, status=status).effective == SERVING.effective
