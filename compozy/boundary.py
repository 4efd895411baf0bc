"""The workspace boundary: race-free reads and atomic writes of files beneath a workspace root.

Layer 2 (an operating-system seam, stdlib only). Every path an agent names is opened relative
to a handle on the root, one component at a time with O_NOFOLLOW (or in one openat2 call with
RESOLVE_BENEATH where the kernel has it), so swapping a file for a symlink between a check and
the open can never reach outside: there is no check-then-open by name. Relative symlinks that
stay beneath the root are followed, and absolute ones that name a place beneath it; any other
absolute link and any `..` above the root are refused.
Only regular files are read or replaced, opened O_NONBLOCK so a FIFO or device cannot block.
"""

import ctypes
import errno
import os
import stat

MAX_SYMLINK_HOPS = 40
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
RESOLVE_NO_MAGICLINKS, RESOLVE_BENEATH = 0x02, 0x08
SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}.get(os.uname().machine)


class OutsideWorkspace(Exception):
    """The path is not a regular file beneath the workspace root (the message says why)."""


def relative_part(root, path):
    """The components of absolute `path` below the canonical `root`, without touching the disk."""
    _check_root(root)
    if not isinstance(path, str) or "\x00" in path or not os.path.isabs(path):
        raise OutsideWorkspace("the path must be absolute")
    normal = os.path.normpath(path)
    if normal != root and not normal.startswith(root.rstrip(os.sep) + os.sep):
        raise OutsideWorkspace("the path is outside the workspace")
    return [part for part in normal[len(root):].split(os.sep) if part]


def open_root(root):
    """A handle on the workspace folder itself, opened one component at a time from / with O_NOFOLLOW:
    the stored root is canonical (no symlink on it), so a folder on the way that was since replaced by
    a symlink is refused instead of moving the boundary elsewhere."""
    _check_root(root)
    fd = os.open("/", DIR_FLAGS)
    try:
        for name in [part for part in root.split(os.sep) if part]:
            parent, fd = fd, None
            try:
                fd = os.open(name, DIR_FLAGS, dir_fd=parent)
            finally:
                os.close(parent)
    except OSError as exc:
        if fd is not None:
            os.close(fd)
        raise OutsideWorkspace(f"the workspace folder cannot be opened: {exc.strerror}") from None
    return fd


def _check_root(root):
    if root is None:
        raise OutsideWorkspace("this workspace may not be reached through file requests")


def read_file(root, path, limit):
    """Up to `limit` bytes of the regular file at `path` beneath `root`."""
    root_fd = open_root(root)
    try:
        fd = _open_file(root, root_fd, relative_part(root, path))
        try:
            return _read_all(fd, limit)
        finally:
            os.close(fd)
    finally:
        os.close(root_fd)


def write_file(root, path, data):
    """Replace (or create) the file at `path` beneath `root` atomically: temp file, then rename.

    Missing folders are created beneath the root. The rename swaps the directory entry, so even
    a leaf replaced by a symlink at the last moment is replaced itself, never followed outside.
    """
    root_fd = open_root(root)
    try:
        parts = relative_part(root, path)
        if not parts:
            raise OutsideWorkspace("the workspace folder itself is not a file")
        dir_fd, name = _resolve_leaf(root, root_fd, parts, create_dirs=True)
        try:
            _replace(dir_fd, name, data)
        finally:
            os.close(dir_fd)
    finally:
        os.close(root_fd)


def _open_file(root, root_fd, parts):
    if not parts:
        raise OutsideWorkspace("the workspace folder itself is not a file")
    fd = _openat2(root_fd, os.path.join(*parts)) if SYS_OPENAT2 else None
    if fd is None:
        dir_fd, name = _resolve_leaf(root, root_fd, parts)
        try:
            fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # became a symlink after the walk looked at it
                raise OutsideWorkspace("the file changed while it was opened") from None
            raise
        finally:
            os.close(dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutsideWorkspace("only regular files can be read")
    return fd


def _resolve_leaf(root, root_fd, parts, create_dirs=False):
    """(fd of the folder holding the final file, its name), every symlink on the way resolved beneath."""
    stack = [os.dup(root_fd)]  # the folders walked so far; stack[-1] is the current one
    pending, hops = list(parts), 0
    try:
        while True:
            name = pending.pop(0)
            if name == ".":
                continue
            if name == "..":
                if len(stack) == 1:
                    raise OutsideWorkspace("the path climbs above the workspace")
                os.close(stack.pop())
                continue
            link = _symlink_target(stack[-1], name)
            if link is not None:
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise OutsideWorkspace("too many symlinks on the path")
                if os.path.isabs(link):  # start again from the root, if the link names a place beneath it
                    try:
                        link_parts = relative_part(root, link)
                    except OutsideWorkspace:
                        raise OutsideWorkspace("the path goes through a symlink that leaves the workspace") from None
                    for fd in stack[1:]:
                        os.close(fd)
                    del stack[1:]
                    pending[:0] = link_parts
                else:
                    pending[:0] = [p for p in link.split(os.sep) if p]
                continue
            if not pending:
                return stack.pop(), name
            stack.append(_open_dir(stack[-1], name, create_dirs))
    finally:
        for fd in stack:
            os.close(fd)


def _symlink_target(dir_fd, name):
    try:
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return os.readlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno != errno.EINVAL:  # EINVAL: no longer a link; the O_NOFOLLOW open decides
            raise
    return None


def _open_dir(dir_fd, name, create):
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, 0o777, dir_fd=dir_fd)
    except FileExistsError:
        pass
    return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def _replace(dir_fd, name, data):
    try:
        existing = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise OutsideWorkspace("only regular files can be written")
    temp = f".{name[:200]}.compozy-{os.getpid()}-{os.urandom(4).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    try:
        _write_all(fd, data)
        if existing is not None:
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))  # a replaced file keeps its mode
    except BaseException:
        os.close(fd)
        os.unlink(temp, dir_fd=dir_fd)
        raise
    os.close(fd)
    os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _read_all(fd, limit):
    chunks, size = [], 0
    while size < limit:
        try:
            chunk = os.read(fd, min(1 << 20, limit - size))
        except BlockingIOError:
            raise OutsideWorkspace("the file would block") from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]  # a partial write continues where it stopped


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = None


def _openat2(dir_fd, relative):
    """openat2(RESOLVE_BENEATH); None when the kernel lacks it or the path uses an absolute symlink
    (the walk then decides, doing the same job one component at a time)."""
    global _libc, SYS_OPENAT2
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    how = _OpenHow(READ_FLAGS & ~os.O_NOFOLLOW, 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(SYS_OPENAT2, dir_fd, relative.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        return fd
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM):  # no openat2 here (or a seccomp filter refuses it)
        SYS_OPENAT2 = None
        return None
    if code == errno.EXDEV:
        return None
    if code == errno.ELOOP:
        raise OutsideWorkspace("too many symlinks on the path")
    raise OSError(code, os.strerror(code), relative)
