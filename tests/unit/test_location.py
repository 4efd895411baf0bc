"""How compozy runs itself again: through the archive it was started from, else `-P -m compozy` (never from the
current folder)."""

import os
import sys
import zipfile

from compozy.location import archive_path, child_environment, package_root, self_command


def test_from_a_checkout_it_runs_the_package_with_its_folder_on_pythonpath_and_never_the_cwd(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["compozy.py"])
    assert archive_path() is None
    assert self_command("agent", "reference") == [sys.executable, "-P", "-m", "compozy", "agent", "reference"]
    assert child_environment({"X": "1"})["PYTHONPATH"].split(os.pathsep)[0] == package_root()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["", ".", "src", "/opt/lib"]))
    assert child_environment()["PYTHONPATH"] == os.pathsep.join([package_root(), "/opt/lib"])


def test_started_from_an_archive_it_runs_the_archive(monkeypatch, tmp_path):
    archive = tmp_path / "compozy.pyz"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("__main__.py", "")
    monkeypatch.setattr(sys, "argv", [str(archive), "daemon", "run"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["", ".", "lib", "/opt/lib"]))
    assert self_command("agent", "reference") == [sys.executable, "-P", str(archive), "agent", "reference"]
    assert child_environment()["PYTHONPATH"] == "/opt/lib"  # the archive needs none; a relative entry is the cwd


def test_a_plain_file_in_argv_is_not_an_archive(monkeypatch, tmp_path):
    script = tmp_path / "compozy.pyz"
    script.write_text("print('not a zip')\n")
    monkeypatch.setattr(sys, "argv", [str(script)])
    assert archive_path() is None
