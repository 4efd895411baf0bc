"""The workspace boundary for agent file requests: symlinks followed, escapes refused."""

import os

from compozy.session.turns.permissions import inside


def test_paths_inside_the_workspace_resolve(tmp_path):
    (tmp_path / "a").mkdir()
    assert inside(str(tmp_path), str(tmp_path / "a" / "new.txt")) == str(tmp_path / "a" / "new.txt")
    assert inside(str(tmp_path), str(tmp_path)) == str(tmp_path)


def test_escapes_are_refused(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret").write_text("no")
    os.symlink(tmp_path / "secret", workspace / "link")
    os.symlink(tmp_path, workspace / "up")
    for path in (str(tmp_path / "secret"), str(workspace / "link"), str(workspace / "up" / "secret"),
                 str(workspace / ".." / "secret"), "relative.txt", str(workspace) + "-sibling/x", "/etc/passwd",
                 str(workspace / "x\x00y"), None, 42):
        assert inside(str(workspace), path) is None, path


def test_a_root_replaced_by_a_symlink_does_not_move(tmp_path):
    """The stored root is canonical and not resolved again (issue 14, finding 3)."""
    workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    workspace.mkdir()
    elsewhere.mkdir()
    root = str(workspace)
    workspace.rename(tmp_path / "ws-old")
    os.symlink(elsewhere, workspace)
    assert inside(root, str(workspace / "file.txt")) is None
