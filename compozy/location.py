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


# -P: never put the current folder (an agent's workspace, where an agent may write
# compozy/__init__.py) first on sys.path, as `-m` and a script path otherwise do (Python 3.11+).
SAFE_PATH = "-P"


def self_command(*args):
    """argv that runs `compozy ARGS` again the way this process runs (checkout, install or archive),
    importing compozy only from where it is installed, whatever the current folder holds."""
    archive = archive_path()
    if archive is None:
        return [sys.executable, SAFE_PATH, "-m", "compozy", *args]
    isolated = ["-I"] if sys.flags.isolated else []  # an archive needs no PYTHONPATH, so keep -I
    return [sys.executable, SAFE_PATH, *isolated, archive, *args]


def import_environment():
    """What a child needs in its environment to import compozy: PYTHONPATH with our package first (none from
    an archive), and never an inherited entry that names the current folder ("", ".", any relative path)."""
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(p)]
    entries = inherited if archive_path() else [package_root(), *inherited]
    return {"PYTHONPATH": os.pathsep.join(entries)}


def child_environment(extra=None):
    """The environment for a child that must import compozy (see self_command), plus extra."""
    return {**os.environ, **import_environment(), **(extra or {})}
