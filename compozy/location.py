"""Where this compozy runs from: a checkout, an install, or a single-file archive; how to run it again.

Layer 0: stdlib only.
"""

import os
import sys
import zipfile


def package_root():
    """The folder (or archive) that holds the compozy package: a checkout, site-packages, a zipapp."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def archive_path():
    """The zip archive this process was started from, else None.

    A stdlib zipapp imports compozy from inside the archive; shiv unpacks it to a cache folder
    but leaves the archive in argv[0]. Either way, running the archive again is how to run us.
    """
    for candidate in (package_root(), sys.argv[0] if sys.argv else ""):
        if candidate and os.path.isfile(candidate) and zipfile.is_zipfile(candidate):
            return os.path.abspath(candidate)
    return None


def self_command(*args):
    """argv that runs `compozy ARGS` again the way this process runs (checkout, install or archive)."""
    archive = archive_path()
    if archive is None:
        return [sys.executable, "-m", "compozy", *args]
    isolated = ["-I"] if sys.flags.isolated else []  # an archive needs no PYTHONPATH, so keep -I
    return [sys.executable, *isolated, archive, *args]


def import_environment():
    """What a child needs in its environment to import compozy: PYTHONPATH, unless we run from an archive."""
    if archive_path():
        return {}
    return {"PYTHONPATH": os.pathsep.join(p for p in (package_root(), os.environ.get("PYTHONPATH")) if p)}


def child_environment(extra=None):
    """The environment for a child that must import compozy (see self_command), plus extra."""
    return {**os.environ, **import_environment(), **(extra or {})}
