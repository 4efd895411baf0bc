"""Workspaces: registered by name and absolute path, resolved by name or ID.

Layer 4. A workspace is the boundary of an agent's file requests, so it may never contain the
daemon's home (the catalog, other sessions' transcripts, config.toml), nor, for a profile's daemon,
the main home that holds every profile, nor be a system folder.
"""

import logging
import os
import re

from compozy import validate as v
from compozy.errors import CompozyError, invalid
from compozy.ids import is_valid_id, new_id

log = logging.getLogger("compozy.workspaces")
NAME = re.compile(v.WORKSPACE_NAME_PATTERN)
SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
DEFAULT_HOME = os.path.join(os.path.expanduser("~"), ".compozy")
PROFILES = "profiles"  # a profile's home is MAIN/profiles/NAME (cli/main.py, use_profile)


def check_directory(path, protected, field="path"):
    """An absolute path to an existing directory, in canonical (symlink-free) form, that may serve
    as a workspace: never `/`, a system folder, or a folder that holds or lies in a protected home."""
    if not isinstance(path, str) or not path:
        raise invalid(f"{field} must be a non-empty string", field=field)
    if "\x00" in path or not os.path.isabs(path):
        raise invalid(f"{field} must be an absolute path", field=field)
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise invalid(f"{field} {path!r} is not an existing directory", field=field)
    reason = unsafe_reason(real, protected)
    if reason:
        raise invalid(f"{field} {path!r} cannot be a workspace: {reason}", field=field, reason=reason)
    return real


def unsafe_reason(real, protected):
    """Why the canonical folder `real` cannot be a workspace, or None."""
    if real == "/":
        return "the root folder holds everything, the daemon's home included"
    if any(real == system or real.startswith(system + "/") for system in SYSTEM_FOLDERS):
        return "system folders are not workspaces"
    for home in protected:
        if home == real or home.startswith(real.rstrip("/") + "/"):
            return f"it contains the compozy home {home} (the daemon's sessions, logs and secret: an agent working " \
                   f"there could read or change them); choose the project's own folder"
        if real.startswith(home + "/"):
            return f"it lies inside the compozy home {home}"
    return None


def protected_homes(home_root):
    """The daemon's own home and the default one, canonical: agents must reach neither. A profile's home
    (MAIN/profiles/NAME) adds the main home, which holds every other profile, its sessions and logs."""
    homes = [home_root, DEFAULT_HOME]
    if os.path.basename(os.path.dirname(os.path.realpath(home_root))) == PROFILES:
        homes.append(os.path.dirname(os.path.dirname(os.path.realpath(home_root))))
    return tuple(dict.fromkeys(os.path.realpath(p) for p in homes))


def check_name(name, field="name"):
    if not isinstance(name, str) or not NAME.match(name):
        raise invalid(f"{field} {v.WORKSPACE_NAME_RULE}", field=field)
    return name


class Workspaces:
    """Workspace lookups, cached: the catalog is only written through this object."""

    def __init__(self, catalog, home_root):
        self.catalog = catalog
        self.protected = protected_homes(home_root)
        self._by_key = {}

    def _remember(self, workspace):
        if workspace:
            for key in (("id", workspace["id"]), ("name", workspace["name"]), ("path", workspace["path"])):
                self._by_key[key] = workspace
        return workspace

    def _lookup(self, kind, value):
        cached = self._by_key.get((kind, value))
        if cached is not None:
            return cached
        found = self.catalog.workspace(value) if kind == "id" else self.catalog.workspace_by(**{kind: value})
        return self._remember(found)

    def register(self, name, path):
        real = check_directory(path, self.protected)
        return self._remember(self.catalog.add_workspace(new_id("ws"), check_name(name), real))

    def resolve(self, reference):
        """By ID or name; anything else is workspace_not_found."""
        if not isinstance(reference, str) or not reference:
            raise invalid("workspace must be a workspace name or ID", field="workspace")
        found = self._lookup("id", reference) if is_valid_id(reference, "ws") else None
        found = found or (NAME.match(reference) and self._lookup("name", reference))
        if not found:
            raise CompozyError("workspace_not_found", f"no workspace {reference[:80]!r}", workspace=reference[:80])
        return found

    def check_usable(self, workspace):
        """Refuse new sessions in a workspace registered before the home rules existed."""
        reason = unsafe_reason(workspace["path"], self.protected)
        if reason:
            raise invalid(f"workspace {workspace['name']} cannot hold sessions: {reason}", field="workspace",
                          reason=reason)
        return workspace

    def for_path(self, path):
        """The workspace registered at path, or a new one named after the directory."""
        real = check_directory(path, self.protected, "workspace_path")
        existing = self._lookup("path", real)
        if existing:
            return existing
        try:
            return self._remember(self.catalog.add_workspace(new_id("ws"), self._free_name(real), real))
        except CompozyError as exc:  # a concurrent create registered the same path first
            existing = exc.code == "workspace_conflict" and self._lookup("path", real)
            if existing:
                return existing
            raise

    def recover(self):
        """Register again, under their own IDs, the workspaces the catalog lost while their sessions remain
        (compozy.db rebuilt from the session folders at boot): at the shortest folder its sessions work in,
        named after it. A workspace whose folder is gone, or no longer a usable one, stays unregistered (its
        sessions are still listed). The IDs registered again."""
        recovered = []
        for workspace_id, folders in sorted(self.catalog.lost_workspaces().items()):
            for folder in sorted(folders, key=len)[:1]:
                try:
                    real = check_directory(folder, self.protected)
                    if self._lookup("path", real) is None:
                        self._remember(self.catalog.add_workspace(workspace_id, self._free_name(real), real))
                        recovered.append(workspace_id)
                except CompozyError as error:
                    log.warning("workspace %s at %s is not registered again: %s", workspace_id, folder, error.message)
        if recovered:
            log.warning("registered again %d workspaces the catalog had lost: %s", len(recovered), recovered)
        return recovered

    def _free_name(self, real):
        base = re.sub(r"[^A-Za-z0-9_.-]", "-", os.path.basename(real) or "root").lstrip("-._")[:56] or "workspace"
        name, counter = base, 1
        while self.catalog.workspace_by(name=name):
            counter += 1
            name = f"{base}-{counter}"
        return name

    def list(self):
        return self.catalog.workspaces()
