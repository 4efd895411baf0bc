"""What listens to the daemon's sessions besides their viewers: hooks, reply wakes, governed children,
auto titles, file checkpoints. Each is an observer (compozy.session.records.observers) built here, once, for a manager.

Layer 4, in derive: the highest session sub-package, so it may wire concerns from every lower one.
"""

from compozy.session.lifecycle.children import Children
from compozy.session.records.indexer import Indexer
from compozy.session.lifecycle.hooks import Hooks
from compozy.session.lifecycle.inbox import Inbox
from compozy.session.lifecycle.notify import Notifiers
from compozy.session.lifecycle.retention import Keeper
from compozy.session.turns.checkpoints import Checkpointer
from compozy.session.turns.messaging import Messaging
from compozy.session.turns.titles import Titles


def observe(manager):
    """Register the observers of a SessionManager's sessions; answers them by name."""
    observers = manager.services.observers
    services = manager.services
    services.checkpoints = observers.add(Checkpointer(services))  # the runner's, at every turn's start and end
    messaging = observers.add(Messaging(services, manager.engine, manager._session))
    services.work_signals.append(messaging.signals)
    services.waits.append(messaging.waits)
    services.inbox = observers.add(Inbox(services))
    hooks = observers.add(Hooks(services))
    services.inbox.listeners.append(Notifiers(services, hooks).opened)
    return {"hooks": hooks, "messaging": messaging,
            "titles": observers.add(Titles(services, manager._session)),
            "children": observers.add(Children(services, manager.stopper, manager._session, manager.workspaces)),
            "search": observers.add(Indexer(services)),
            "retention": observers.add(Keeper(services, manager._session, lambda r: manager.remove_session(r.id)))}
