"""The shadow repository: git plumbing on a repository of the daemon's own, never the user's.

Layer 2 (an operating-system seam; stdlib only). One repository per workspace under
<home>/checkpoints/<workspace_id>/ (its objects shared by every session of the workspace), one
index per working folder (its stat cache: an unchanged file costs one stat), GIT_WORK_TREE the
folder. Every call runs with GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE set and without the
system's or the user's git configuration, so the user's .git, branches, index, stash and hooks
are never read or written; their .gitignore files and .git/info/exclude are honoured.
"""

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
REF_ROOT = "refs/compozy"
LISTED_CHANGES = 100  # a checkpoint names at most this many changed files; the count is always whole
CALL_TIMEOUT = 30.0


class ShadowError(Exception):
    """A checkpoint could not be taken or used; reason is a stable word (git_unavailable, timeout,
    too_many_files, git_failed, not_a_folder)."""

    def __init__(self, reason, message):
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass
class Snapshot:
    tree: str
    changes: list = field(default_factory=list)   # [{"path", "status", ("from")}], at most LISTED_CHANGES
    changed: int = 0                              # how many files changed since the tree compared with
    bytes: int = 0                                # the size of the files read into objects this time
    skipped: list = field(default_factory=list)   # [{"path", "bytes", "reason"}]


def git_path():
    return shutil.which("git")


def run_plain(argv, timeout, **options):
    return subprocess.run(argv, capture_output=True, check=False, timeout=timeout, **options)


def _held(given):
    """git's stdin: the bytes in an unlinked file of their own (None: the daemon's stdin)."""
    if given is None:
        return contextlib.nullcontext()
    held = tempfile.TemporaryFile()
    held.write(given)
    held.seek(0)
    return held


class ShadowRepo:
    """The shadow repository of one workspace, checkpointing one working folder."""

    def __init__(self, git_dir, work_tree, timeout=CALL_TIMEOUT, run=None):
        self.git_dir, self.work_tree = Path(git_dir), Path(work_tree)
        self.index = self.git_dir / f"index-{hashlib.sha256(str(work_tree).encode()).hexdigest()[:16]}"
        self.timeout = timeout
        self.run = run or run_plain  # run(argv, timeout, **Popen options) -> CompletedProcess: proc.run_captured
        self.lock = threading.RLock()  # one git writer per index at a time
        self.written = None  # the tree the index last wrote (unchanged index: the same tree, no call)

    # -- plumbing ---------------------------------------------------------------------------

    def _environment(self, index=None, located=True):
        plain = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
                 "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "HOME": str(self.git_dir)}
        if not located:
            return plain
        return {**plain, "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.work_tree),
                "GIT_INDEX_FILE": str(index or self.index)}

    def _settings(self):
        exclude = self.work_tree / ".git" / "info" / "exclude"
        return ["-c", f"core.excludesFile={exclude if exclude.is_file() else os.devnull}",
                "-c", "core.autocrlf=false", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false",
                "-c", "core.safecrlf=false", "-c", "gc.auto=0", "-c", "core.hooksPath=" + os.devnull]

    def git(self, *arguments, given=None, index=None, text=True, timeout=None, located=True, private=True):
        """Run one git command in the work tree; its stdout (str, or bytes with text=False). private: what it
        writes is the daemon's (the repository, an index: owner-only, as everything in the home); a checkout
        into a folder of the user's keeps the user's own file modes."""
        program = git_path()
        if program is None:
            raise ShadowError("git_unavailable", "git is not installed (no `git` on PATH)")
        try:
            with _held(given if given is None or not text else given.encode()) as stdin:
                done = self.run([program, *self._settings(), *arguments], timeout or self.timeout, stdin=stdin,
                                cwd=self.work_tree if self.work_tree.is_dir() else self.git_dir.parent,
                                env=self._environment(index, located), start_new_session=True,
                                umask=0o077 if private else -1)
        except subprocess.TimeoutExpired:
            # git was killed holding its index lock: only this repository object writes that index (self.lock),
            # so the lock is stale and goes, or every later checkpoint of the folder would fail on it.
            _unlink(Path(f"{index or self.index}.lock"))
            raise ShadowError("timeout", f"git {arguments[0]} took longer than {timeout or self.timeout:g}s") from None
        except OSError as exc:
            raise ShadowError("git_failed", f"git {arguments[0]} could not run: {exc}") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()[-500:]
            raise ShadowError("git_failed", f"git {arguments[0]} failed ({done.returncode}): {said}")
        return done.stdout.decode(errors="surrogateescape") if text else done.stdout

    def ensure(self):
        if not self.work_tree.is_dir():
            raise ShadowError("not_a_folder", f"the workspace folder {self.work_tree} does not exist")
        if not (self.git_dir / "HEAD").exists():
            # Made aside and renamed into place: a repository cut short (a timeout) is never half there.
            self.git_dir.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            aside = self.git_dir.with_name(f"{self.git_dir.name}.init-{os.getpid()}-{threading.get_ident()}")
            shutil.rmtree(aside, ignore_errors=True)
            try:
                self.git("init", "-q", "--bare", str(aside), located=False)
                self.git("--git-dir", str(aside), "config", "core.bare", "false", located=False)
                os.chmod(aside, 0o700)
                os.rename(aside, self.git_dir)
            except OSError as exc:
                if not (self.git_dir / "HEAD").exists():  # not merely made meanwhile by another folder's checkpoint
                    raise ShadowError("git_failed", f"the shadow repository could not be made: {exc}") from None
            finally:
                shutil.rmtree(aside, ignore_errors=True)
        return self

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self, since=None, max_file_bytes=10 << 20, max_files=100_000):
        """The folder's state as a tree, read through the index; changes counted against `since`."""
        with self.lock:
            self.ensure()
            if self.written is None:  # a daemon killed during a git call left its index lock: none runs now
                _unlink(Path(f"{self.index}.lock"))
            paths = _paths(self.git("ls-files", "-z", "-m", "-o", "-d", "--exclude-standard", *self._own_folder()))
            if len(paths) > max_files:
                raise ShadowError("too_many_files", f"{len(paths)} files to read, over checkpoints.max_files "
                                                    f"({max_files})")
            update, dropped, skipped, read = self._sort(paths, max_file_bytes)
            if update:
                self.git("update-index", "-z", "--add", "--remove", "--stdin", given="\0".join(update) + "\0")
            if dropped:
                self.git("update-index", "-z", "--force-remove", "--stdin", given="\0".join(dropped) + "\0")
            if update or dropped or self.written is None:  # only this object writes the index
                self.written = self.git("write-tree").strip()
            tree = self.written
            changed, listed = self.changes(since or EMPTY_TREE, tree)
        return Snapshot(tree, listed, changed, read, skipped)

    def _own_folder(self):
        """The shadow repository itself is never read into a checkpoint (a folder that holds the home)."""
        try:
            inside = self.git_dir.parent.resolve().relative_to(self.work_tree.resolve())
        except ValueError:
            return ()
        return ("--exclude", f"/{inside.as_posix()}/")

    def _sort(self, paths, max_file_bytes):
        """What to read (or remove), what to drop from the index, what was skipped and the bytes read."""
        update, dropped, skipped, read = [], [], [], 0
        for path in paths:
            if path.endswith("/"):  # a nested repository: its own history is not ours to copy
                skipped.append({"path": path, "bytes": None, "reason": "nested_repository"})
                continue
            try:
                info = os.lstat(self.work_tree / path)
            except FileNotFoundError:
                update.append(path)
                continue
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_size > max_file_bytes:
                skipped.append({"path": path, "bytes": info.st_size, "reason": "over_max_file_bytes"})
                dropped.append(path)
                continue
            update.append(path)
            read += info.st_size if stat.S_ISREG(info.st_mode) else 0
        return update, dropped, skipped, read

    def changes(self, old, new, limit=LISTED_CHANGES):
        """(how many files differ, the first `limit` of them as {"path", "status", "from"?})."""
        if old == new:
            return 0, []
        fields = self.git("diff-tree", "-r", "-z", "-M", "--name-status", "--no-ext-diff", old, new).split("\0")
        listed, count, i = [], 0, 0
        while i < len(fields) - 1:
            code = fields[i]
            if code[:1] in ("R", "C"):
                entry, i = {"path": fields[i + 2], "status": "renamed", "from": fields[i + 1]}, i + 3
            else:
                entry, i = {"path": fields[i + 1], "status": STATUS.get(code[:1], "modified")}, i + 2
            count += 1
            if limit is None or len(listed) < limit:
                listed.append(entry)
        return count, listed

    # -- diffs ------------------------------------------------------------------------------

    def diff(self, old, new, max_bytes=1 << 20):
        """The unified diff between two trees (binary files named, never dumped), truncated at max_bytes."""
        patch = self.git("diff-tree", "-p", "-r", "-M", "--no-color", "--no-ext-diff", "--no-textconv", old, new)
        return (patch[:max_bytes], True) if len(patch) > max_bytes else (patch, False)

    def numstat(self, old, new):
        """[{"path", "status", "added", "deleted", "binary", ("from")}] of every changed file."""
        count, listed = self.changes(old, new, limit=None)
        fields = self.git("diff-tree", "-r", "-z", "-M", "--numstat", "--no-ext-diff", old, new).split("\0")
        counts, i = {}, 0
        while i < len(fields) - 1:
            added, deleted, path = fields[i].split("\t", 2)
            if path == "":  # a rename: the old and the new path follow
                path, i = fields[i + 2], i + 3
            else:
                i += 1
            counts[path] = (added, deleted)
        for entry in listed:
            added, deleted = counts.get(entry["path"], ("0", "0"))
            entry.update(binary=added == "-", added=0 if added == "-" else int(added),
                         deleted=0 if deleted == "-" else int(deleted))
        return listed

    # -- putting files back -----------------------------------------------------------------

    def restore(self, current, target):
        """Write the work tree from `target` where it differs from `current` (both trees of it):
        files are written or deleted; ignored and skipped files are in neither tree and stay."""
        with self.lock:
            fields = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", current, target).split("\0")
            pairs = list(zip(fields[0::2], fields[1::2]))
            removed = [path for code, path in pairs if code == "D"]
            written = [path for code, path in pairs if code and code != "D"]
            for path in removed:
                _remove(self.work_tree, path)
            if written:
                self._check_out(target, written)
        return written, removed

    def _check_out(self, tree, paths=None, work_tree=None):
        scratch = self.git_dir / f"checkout-{os.getpid()}-{threading.get_ident()}"
        try:
            self.git("read-tree", tree, index=scratch)
            if paths is None:
                self._git_at(work_tree, "checkout-index", "-a", "-f", index=scratch)
            else:
                for path in paths:
                    _clear_way(self.work_tree, path)
                self.git("checkout-index", "-f", "-z", "--stdin", given="\0".join(paths) + "\0", index=scratch,
                         private=False)
        finally:
            scratch.unlink(missing_ok=True)

    def _git_at(self, work_tree, *arguments, index=None):
        saved, self.work_tree = self.work_tree, Path(work_tree)
        try:
            return self.git(*arguments, index=index, private=False)
        finally:
            self.work_tree = saved

    def copy_to(self, tree, folder):
        """A new folder holding `tree`'s files (a checkout, as `git worktree add` would make one)."""
        with self.lock:
            Path(folder).mkdir()  # the user's folder, made as the user's process would
            self._check_out(tree, work_tree=folder)

    # -- references and pruning -------------------------------------------------------------

    def keep(self, session_id, checkpoint_id, tree):
        """A reference per checkpoint keeps its tree (and every blob in it) from gc. Written as git's loose
        reference file (gitrepository-layout: the object name and a newline), renamed into place: one
        process less per checkpoint than `git update-ref`, which reads and deletes it the same way."""
        folder = self.git_dir / REF_ROOT / session_id
        for made in (folder.parent, folder):  # mkdir's mode is only the last folder's
            made.mkdir(exist_ok=True, mode=0o700)
        aside = folder / f".{checkpoint_id}.lock"
        descriptor = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(tree + "\n")
        os.replace(aside, folder / checkpoint_id)

    def fetch(self, source, session_id):
        """One session's references, and every object they reach, fetched from another shadow repository (its
        old node's, for a session adopted from it); {refname: tree} of that session's references here now."""
        with self.lock:
            self.ensure()
            self.git("fetch", "-q", "--no-tags", "--no-write-fetch-head", str(source),
                     f"+{REF_ROOT}/{session_id}/*:{REF_ROOT}/{session_id}/*", timeout=max(self.timeout, 300.0))
        return self.refs(session_id)

    def has(self, tree):
        """Whether the tree is still in the repository (gc may have pruned it)."""
        try:
            self.git("cat-file", "-e", f"{tree}^{{tree}}")
            return True
        except ShadowError as error:
            if error.reason != "git_failed":
                raise
            return False

    def drop(self, refs):
        if refs:
            self.git("update-ref", "--stdin", given="".join(f"delete {ref}\n" for ref in refs))

    def refs(self, session_id=None):
        """{refname: tree} of every checkpoint reference (of one session when given)."""
        prefix = f"{REF_ROOT}/{session_id}/" if session_id else f"{REF_ROOT}/"
        listed = self.git("for-each-ref", "--format=%(refname) %(objectname)", prefix).split("\n")
        return dict(line.split(" ", 1) for line in listed if line)

    def prune(self):
        """Delete every object no checkpoint reference reaches; the bytes the objects take, before and after."""
        with self.lock:
            before = folder_bytes(self.git_dir / "objects")
            self.git("prune", "--expire=now", timeout=max(self.timeout, 300.0))
            self.git("repack", "-a", "-d", "-q", timeout=max(self.timeout, 300.0))
            self.git("prune-packed", timeout=max(self.timeout, 300.0))
            return before, folder_bytes(self.git_dir / "objects")


STATUS = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}


def _paths(listing):
    seen, paths = set(), []
    for path in listing.split("\0"):
        if path and path not in seen:
            seen.add(path)
            paths.append(path)
    return paths


def _remove(root, path):
    target = root / path
    try:
        target.unlink()
    except FileNotFoundError:
        return
    except IsADirectoryError:
        return
    parent = target.parent
    while parent != root:
        try:
            parent.rmdir()  # only an empty folder the restore emptied
        except OSError:
            return
        parent = parent.parent


def _clear_way(root, path):
    """An empty folder where the tree has a file is moved out of checkout-index's way (a full one stays)."""
    target = root / path
    if target.is_dir() and not target.is_symlink():
        try:
            target.rmdir()
        except OSError:
            pass


def folder_bytes(folder):
    total = 0
    for base, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                pass
    return total


def _unlink(path):
    try:
        path.unlink()
    except FileNotFoundError:
        pass
