"""The type hints hold: mypy checks compozy/ with the settings in setup.cfg ([mypy]: the annotated
functions of the daemon; the reference agent's untyped mixins are left out), so a hint that lies
about what a function takes or gives fails here, in the README's test command."""

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="mypy is in the test extra (setup.cfg)")

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_finds_no_type_error_in_compozy(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # setup.cfg's [mypy] section names the files
    report, errors, status = mypy_api.run(["--config-file", str(ROOT / "setup.cfg"),
                                           "--cache-dir", str(tmp_path / "mypy-cache")])
    assert status == 0, report + errors
