"""The workspace boundary on real files: reads and writes stay beneath the root, whatever the links do.

Each test runs twice: through openat2 (where the kernel has it) and through the component walk
that replaces it elsewhere, so both paths hold the same line.
"""

import os
import threading
from pathlib import Path

import pytest

from compozy import boundary

STRESS_ROUNDS = int(os.environ.get("COMPOZY_STRESS_ROUNDS", "3000"))


@pytest.fixture(params=["openat2", "walk"])
def mode(request, monkeypatch):
    if request.param == "walk" or boundary.SYS_OPENAT2 is None:
        monkeypatch.setattr(boundary, "SYS_OPENAT2", None)
    return request.param


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (root / "sub" / "inside.txt").write_text("fine")
    return str(root.resolve()), outside


def read(root, relative):
    return boundary.read_file(root, os.path.join(root, relative), 1 << 20)


def test_reads_a_regular_file_inside(mode, tree):
    root, _ = tree
    assert read(root, "sub/inside.txt") == b"fine"


def test_read_stops_at_the_limit(mode, tree):
    root, _ = tree
    assert boundary.read_file(root, os.path.join(root, "sub/inside.txt"), 2) == b"fi"


def test_missing_file_is_not_found(mode, tree):
    root, _ = tree
    with pytest.raises(FileNotFoundError):
        read(root, "sub/none.txt")


@pytest.mark.parametrize("path", ["relative/path", "/etc/passwd", "", None, "/tmp/\x00x"])
def test_paths_not_lexically_beneath_the_root_are_refused(mode, tree, path):
    root, _ = tree
    with pytest.raises(boundary.OutsideWorkspace):
        boundary.read_file(root, path, 100)


def test_dot_dot_out_of_the_root_is_refused(mode, tree):
    root, _ = tree
    with pytest.raises(boundary.OutsideWorkspace):
        boundary.read_file(root, root + "/sub/../../outside/secret.txt", 100)


def test_links_that_stay_inside_are_followed(mode, tree):
    root, _ = tree
    os.symlink("sub/inside.txt", os.path.join(root, "relative-link"))
    os.symlink(os.path.join(root, "sub"), os.path.join(root, "absolute-dir-link"))
    assert read(root, "relative-link") == b"fine"
    assert read(root, "absolute-dir-link/inside.txt") == b"fine"


@pytest.mark.parametrize("target", ["../outside/secret.txt", "ABS"])
def test_links_that_leave_are_refused_for_reads_and_writes(mode, tree, target):
    root, outside = tree
    target = str(outside / "secret.txt") if target == "ABS" else target
    os.symlink(target, os.path.join(root, "leak"))
    os.symlink(str(outside), os.path.join(root, "leak-dir"))
    for name in ("leak", "leak-dir/secret.txt"):
        with pytest.raises(boundary.OutsideWorkspace):
            read(root, name)
        with pytest.raises(boundary.OutsideWorkspace):
            boundary.write_file(root, os.path.join(root, name), b"overwritten")
    assert (outside / "secret.txt").read_text() == "top secret"


def test_a_root_replaced_by_a_link_does_not_move_the_boundary(mode, tree, tmp_path):
    root, outside = tree
    os.rename(root, str(tmp_path / "moved"))
    os.symlink(str(outside), root)
    with pytest.raises(boundary.OutsideWorkspace):
        read(root, "secret.txt")


def test_special_files_are_refused_without_blocking(mode, tree):
    root, _ = tree
    os.mkfifo(os.path.join(root, "pipe"))
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_refused(lambda: read(root, "pipe"))), daemon=True)
    reader.start()
    reader.join(10)
    assert outcome == [True], "a FIFO read must be refused at once, never block"
    with pytest.raises(boundary.OutsideWorkspace):
        read(root, "sub")  # a folder is not a file
    with pytest.raises(boundary.OutsideWorkspace):
        boundary.write_file(root, os.path.join(root, "pipe"), b"x")


def _refused(call):
    try:
        call()
    except boundary.OutsideWorkspace:
        return True
    return False


def test_write_creates_folders_and_replaces_atomically(mode, tree):
    root, _ = tree
    path = os.path.join(root, "new/deeper/file.txt")
    boundary.write_file(root, path, b"one")
    os.chmod(path, 0o640)
    boundary.write_file(root, path, "twö".encode())
    assert Path(path).read_text(encoding="utf-8") == "twö"
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert [n for n in os.listdir(os.path.dirname(path)) if n.endswith(".tmp")] == []


def test_write_through_an_inside_link_writes_its_target(mode, tree):
    root, _ = tree
    os.symlink("sub/inside.txt", os.path.join(root, "alias"))
    boundary.write_file(root, os.path.join(root, "alias"), b"changed")
    assert Path(root, "sub/inside.txt").read_text() == "changed"
    assert os.path.islink(os.path.join(root, "alias"))


def test_swapping_a_file_for_an_outside_link_never_leaks(mode, tree):
    """A loop swaps a workspace file between a regular file and a link to an outside secret while
    reads and writes go on: no read returns the secret and no write lands outside."""
    root, outside = tree
    secret = outside / "secret.txt"
    name = os.path.join(root, "swap.txt")
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            temp = name + ".new"
            Path(temp).write_text("inside")
            os.replace(temp, name)
            link = name + ".link"
            os.symlink(str(secret), link)
            os.replace(link, name)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    leaks = []
    try:
        for index in range(STRESS_ROUNDS):
            try:
                if index % 2:
                    boundary.write_file(root, name, b"written")
                elif read(root, "swap.txt") == b"top secret":
                    leaks.append(index)
            except (boundary.OutsideWorkspace, FileNotFoundError):
                pass
    finally:
        stop.set()
        thread.join(10)
    assert leaks == []
    assert secret.read_text() == "top secret"


def test_a_workspace_without_file_access_refuses_everything(mode, tree):
    root, _ = tree
    with pytest.raises(boundary.OutsideWorkspace):
        boundary.read_file(None, os.path.join(root, "sub/inside.txt"), 100)
    with pytest.raises(boundary.OutsideWorkspace):
        boundary.write_file(None, os.path.join(root, "x.txt"), b"x")
