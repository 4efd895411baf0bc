"""Services: what every session of this daemon shares, built once by the manager.

Layer 4. Configuration, the stores and the catalog's feed, the clock and the process table the timers
and the stop ladder read, the background threads, the registry of live sessions, the bindings'
identities, the file checkpoints, the observers and the inbox, and the callables the supervision
sweep and the waiting view ask.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from compozy.clock import Clock
from compozy.config import Config
from compozy.paths import Home
from compozy.proc import ProcessTable
from compozy.session.records.feed import Feed
from compozy.session.records.observers import Observers
from compozy.session.records.store import SessionStore
from compozy.store.catalog import Catalog
from compozy.threads import Threads

if TYPE_CHECKING:
    from compozy.session.records.live import LiveSession


@dataclass
class Services:
    """What every session shares: configuration, stores, feeds, the clock and the process table the
    timers and the stop ladder read, the registry of live sessions and the bindings' identities."""

    home: Home
    config: Config
    catalog: Catalog
    store: SessionStore
    catalog_feed: Feed
    clock: Clock
    processes: ProcessTable  # a fake one in unit tests (tests/harness/fakes.py)
    live_sessions: Callable[[], list[LiveSession]] | None = None
    identities: Any = None  # compozy.session.turns.identity.Identities, a layer above this one
    checkpoints: Any = None  # session.turns.checkpoints.Checkpointer: file checkpoints at turn boundaries
    observers: Observers = field(default_factory=Observers)
    threads: Threads = field(default_factory=Threads)  # every background thread of the daemon
    # callables: session -> more supervision.work_signals, and -> more of what it waits on (records.waiting)
    work_signals: list[Callable[[LiveSession], list[dict]]] = field(default_factory=list)
    waits: list[Callable[[LiveSession], list[dict]]] = field(default_factory=list)
    accepting: bool = True
    inbox: object = None  # the attention inbox (compozy.session.lifecycle.inbox), built with the observers
    sweeps: list = field(default_factory=list)  # callables: monotonic now -> None, on every supervision sweep
