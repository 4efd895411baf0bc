"""Schemathesis over /api/openapi.json on a running daemon (issue 9): every operation, a bounded number
of generated requests each, never a 5xx; every refusal is the error body with a stable code, and the
daemon still answers at the end. Half the generated requests name a real workspace, session and queue
entry instead of random ones, so the fuzzer reaches past the 404s into validation and the state checks.

COMPOZY_LONG=1 raises the examples per operation (COMPOZY_FUZZ_EXAMPLES overrides both).
"""

import os
import uuid
import zlib

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings

from tests.harness.api import run_turn, spath
from tests.harness.daemon import DaemonProcess
from tests.harness.runner import kill_marked

EXAMPLES = int(os.environ.get("COMPOZY_FUZZ_EXAMPLES", "300" if os.environ.get("COMPOZY_LONG") == "1" else "5"))
STREAMS = ("session.stream", "session.catalog_stream", "attention.stream")


class Target:
    """The daemon under fuzz and real identifiers to aim at (replaced once a fuzzed request removes them)."""

    def __init__(self, daemon, workspace):
        self.daemon, self.workspace = daemon, workspace
        self.api = daemon.client(timeout=60)
        self.session = self._create()
        run_turn(self.api, self.session, "[chunks 2] seed")  # events, history and a settled turn to aim at

    def _create(self):
        return self.api.call("POST", "/api/sessions", {"workspace_path": str(self.workspace)})[1]["session"]

    def ids(self):
        if not self._exists():
            self.session = self._create()
        return {"workspace": self.session["workspace_id"], "session_id": self.session["id"], "entry": "queue_0"}

    def _exists(self):
        try:
            return self.api.call("GET", spath(self.session))[0] == 200
        except Exception:  # noqa: BLE001 (removed by a fuzzed request: make another)
            return False


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    marker, previous = f"compozy-test-{uuid.uuid4().hex}", os.environ.get("COMPOZY_TEST_MARK")
    os.environ["COMPOZY_TEST_MARK"] = marker
    workspace = root / "workspace"
    workspace.mkdir()
    daemon = DaemonProcess(root / "home").start()
    try:
        yield Target(daemon, workspace.resolve())
        assert daemon.client(timeout=30).call("GET", "/api/health")[0] == 200, "the daemon went deaf"
    finally:
        daemon.stop()
        leaked = kill_marked(marker)
        if previous is None:
            os.environ.pop("COMPOZY_TEST_MARK", None)
        else:
            os.environ["COMPOZY_TEST_MARK"] = previous
    assert leaked == [], f"processes outlived the fuzzed daemon: {leaked}"


@pytest.fixture(scope="module")
def api_schema(target):
    return schemathesis.openapi.from_url(target.daemon.http_url + "/api/openapi.json",
                                         headers=target.daemon.auth_headers)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_generated_request_is_a_server_error(case, target):
    if zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode()) % 2 == 0:
        real = target.ids()
        case.path_parameters = {name: real.get(name, value) for name, value in (case.path_parameters or {}).items()}
    kwargs = case.as_transport_kwargs(base_url=target.daemon.http_url, headers=target.daemon.auth_headers)
    streaming = case.operation.label and case.operation.definition.raw.get("operationId") in STREAMS
    with requests.request(**kwargs, timeout=60, stream=True) as response:
        status = response.status_code
        body = b"" if streaming and status == 200 else response.content
    assert status < 500, f"{case.method} {case.formatted_path}: {status} {body[:500]!r}\n{case.as_curl_command()}"
    if status >= 400 and status != 405:
        error = response.json() if body else None
        assert isinstance(error, dict) and isinstance(error.get("code"), str), f"{status} without an error body: {body[:300]!r}"
