"""Notifiers: the [[notify]] commands of config.toml, run with an attention item as JSON on stdin when it opens.

Layer 4. A listener of the inbox (compozy.session.lifecycle.inbox): each notifier whose kinds and
workspaces match the item runs its command through the hooks' runner (compozy.session.lifecycle.hooks:
a thread, its own process group, a time bound, the daemon's environment without any secret-named
variable, the output bounded and redacted), in the daemon's home folder rather than a workspace. A
notifier runs at most `max_per_minute` times a minute; an item past that is recorded as skipped. Every
run is kept in the catalog (`notify_runs`) and `compozy status` shows the newest.
"""

import logging
import threading
from collections import deque

from compozy.clock import now_iso
from compozy.ids import new_id

log = logging.getLogger("compozy.notify")

WINDOW_SECONDS = 60.0


class Notifiers:
    def __init__(self, services, hooks):
        self.services, self.hooks = services, hooks
        self.started = {}  # notifier -> deque of monotonic start times within the last minute
        self.lock = threading.Lock()

    def opened(self, item):
        for notifier in self.services.config.notifiers:
            if self._matches(notifier, item):
                if self._admit(notifier):
                    self.services.threads.start("notify", self._run, notifier, item)
                else:
                    self._keep({"item_id": item["id"], "kind": item["kind"], "command": list(notifier.command),
                                "started_at": now_iso(), "skipped": "rate_limited", "exit_code": None})

    def _matches(self, notifier, item):
        if notifier.kinds and item["kind"] not in notifier.kinds:
            return False
        if not notifier.workspaces:
            return True
        workspace = item.get("workspace_id") and self.services.catalog.workspace(item["workspace_id"])
        return bool(workspace) and bool({workspace["id"], workspace["name"]} & set(notifier.workspaces))

    def _admit(self, notifier):
        now = self.services.clock.monotonic()
        with self.lock:
            starts = self.started.setdefault(notifier, deque())
            while starts and now - starts[0] >= WINDOW_SECONDS:
                starts.popleft()
            if len(starts) >= notifier.per_minute:
                return False
            starts.append(now)
            return True

    def _run(self, notifier, item):
        payload = {"event": "attention.opened", **item}
        env = {"COMPOZY_ATTENTION_ITEM": item["id"], "COMPOZY_ATTENTION_KIND": item["kind"]}
        run = self.hooks.run("attention.opened", notifier.command, payload, notifier.timeout,
                             str(self.services.home.root), env)
        self._keep({**run, "item_id": item["id"], "kind": item["kind"]})
        if run["exit_code"] != 0:
            log.warning("notifier for %s exited %s%s", item["id"], run["exit_code"],
                        " (timed out)" if run["timed_out"] else "")

    def _keep(self, run):
        try:
            self.services.catalog.attention.record_run({"id": new_id("hook"), **run})
        except Exception:  # noqa: BLE001 (the daemon may be closing its catalog)
            log.warning("notifier run for %s not recorded", run["item_id"], exc_info=True)
