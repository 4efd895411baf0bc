"""A state table as data, and the one check every change of state goes through.

Layer 0: stdlib only. The tables themselves are in compozy/states.py.
"""


class IllegalTransition(AssertionError):
    """A state table refused an edge: a bug, never a user error. It names the table and both states."""

    def __init__(self, machine, current, new, repair=False):
        self.machine, self.current, self.new, self.repair = machine, current, new, repair
        kind = "repair" if repair else "transition"
        super().__init__(f"illegal {machine.name or 'session'} {kind} {current} -> {new}")

    @property
    def edge(self):
        """The refused edge as scenarios name edges: `runtime:recovering->binding`."""
        return self.machine.edge_name((self.current, self.new), self.repair)


class Machine:
    """A state machine as data: its states, the edges the daemon may take while it runs, and the
    distinct edges only boot repair may take (after an unclean exit, never at run time)."""

    def __init__(self, name, states, edges, repairs=()):
        self.name, self.states = name, states
        self.edges, self.repairs = frozenset(edges), frozenset(repairs)

    def check(self, current, new, repair=False):
        """new, as the enum, when current -> new is an edge (staying put always is); an illegal edge
        is a bug, never a user error."""
        current, new = self.states(current), self.states(new)
        if current != new and (current, new) not in (self.repairs if repair else self.edges):
            raise IllegalTransition(self, current, new, repair)
        return new

    def edge_name(self, edge, repair=False):
        """How scenarios name an edge in `covers`: `active->stopping`, `turn:binding->prompting`,
        `boot:active->stopped`, `boot:queue:dispatching->sent`."""
        prefix = ("boot:" if repair else "") + (f"{self.name}:" if self.name else "")
        return f"{prefix}{edge[0].value}->{edge[1].value}"

    def edge_names(self):
        return {self.edge_name(e) for e in self.edges} | {self.edge_name(e, True) for e in self.repairs}
