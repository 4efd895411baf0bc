"""Every background thread of one daemon has one owner: `services.threads.start(name, target, *args)`
starts it named and counted, shutdown joins what still runs, and inspect shows them (checked by
tests/unit/test_owners.py: nothing else in the daemon starts a thread).

Layer 0: stdlib and compozy.clock only.
"""

import logging
import threading
from typing import Any, Callable

from compozy.clock import monotonic

log = logging.getLogger("compozy.threads")


class Threads:
    """The threads one daemon started and those of them still running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[threading.Thread, str] = {}  # Thread -> its name
        # the server loops: they end when the servers close, after the shutdown
        self._serving: set[threading.Thread] = set()
        self._delayed: set[threading.Event] = set()  # the cancel events of what after() scheduled and has not run
        self.started = 0

    def start(self, name: str, target: Callable[..., object], *args: Any, serving: bool = False) -> threading.Thread:
        """Run target(*args) on a new daemon thread called name; the thread, started. serving: a server
        loop, which the daemon ends after the shutdown (join leaves it be)."""
        thread = threading.Thread(target=self._run, args=(target, args), name=name, daemon=True)
        with self._lock:
            self._running[thread] = name  # before it starts: one that ends at once still leaves the set
            self.started += 1
            if serving:
                self._serving.add(thread)
        thread.start()
        return thread

    def after(self, name: str, delay: float, target: Callable[..., object], *args: Any) -> threading.Event:
        """Run target(*args) in delay seconds on a thread called name, unless the returned event is set
        first (set() cancels it; so does the shutdown's join)."""
        canceled = threading.Event()
        with self._lock:
            self._delayed.add(canceled)

        def wait_then_run():
            try:
                if not canceled.wait(delay):
                    target(*args)
            finally:
                with self._lock:
                    self._delayed.discard(canceled)
        self.start(name, wait_then_run)
        return canceled

    def _run(self, target: Callable[..., object], args: tuple) -> None:
        try:
            target(*args)
        finally:
            with self._lock:
                self._running.pop(threading.current_thread(), None)

    def running(self, containing: str = "") -> list[str]:
        """The names of the running threads (those whose name contains `containing`), sorted."""
        with self._lock:
            return sorted(name for name in self._running.values() if containing in name)

    def view(self, containing: str = "") -> dict:
        """What inspect shows: how many this daemon started and runs now, and the running ones named."""
        with self._lock:
            count = len(self._running)
        return {"started": self.started, "running": count, "named": self.running(containing)}

    def join(self, timeout: float) -> list[str]:
        """Wait at most timeout seconds in all for the running threads to end; the names of those left."""
        deadline = monotonic() + timeout
        with self._lock:
            for canceled in self._delayed:
                canceled.set()
            threads = [t for t in self._running if t is not threading.current_thread() and t not in self._serving]
        for thread in threads:
            thread.join(max(0.0, deadline - monotonic()))
        left = sorted(t.name for t in threads if t.is_alive())
        if left:
            log.info("%d thread(s) still running at shutdown: %s", len(left), ", ".join(left[:20]))
        return left
