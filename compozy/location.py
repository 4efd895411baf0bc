"""Where this compozy runs from: a checkout, an install, or the zipapp; how to run it again.

Layer 0: stdlib only.
"""

import os
import sys


def package_root():
    """The folder that holds the compozy package (a checkout, site-packages, or the zipapp)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def zipapp_path():
    root = package_root()
    return root if root.endswith(".pyz") else None


def child_environment(extra=None):
    """The daemon's environment for a child that must import compozy, plus extra."""
    env = dict(os.environ)
    root = package_root()
    if not zipapp_path():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def self_command(*args):
    """argv that runs this compozy again (from a checkout, an install or the zipapp)."""
    pyz = zipapp_path()
    return [sys.executable, pyz, *args] if pyz else [sys.executable, "-m", "compozy", *args]
