"""A transcript's turns, its fences, and the context a continue or fork carries from it.

Layer 4. A turn opens with its user_message and settles with one done or error. A derivation
carries the active transcript through a settled turn (the last one, or the turn of a chosen user
message), with what the source itself carried flattened in front once, through the one bounded
replay (records/replay.py). Nothing here writes.
"""

from dataclasses import dataclass
from itertools import takewhile

from compozy.errors import CompozyError, invalid
from compozy.validate import FENCE_NAMES
from compozy.session.records.replay import CarriedContext, bound, fold_history

TERMINAL = ("done", "error")
RUNNING_NOTE = ("[A later turn was still running when this context was taken and is not included; "
                "its tools may have partially executed.]")


def fences_of(record, max_sequence):
    return {"epoch": (record.fences or {}).get("epoch", 0), "generation": (record.fences or {}).get("generation", 0),
            "max_sequence": max_sequence}


def expected_fences(body, required=False):
    """{epoch, generation, max_sequence} from a request's expected_* fields: all three or none."""
    given = [name for name in FENCE_NAMES if name in body]
    if given and len(given) != len(FENCE_NAMES) or (required and not given):
        raise invalid("send expected_epoch, expected_generation and expected_max_sequence together"
                      + ("" if not required else " (they are required)"), fields=list(FENCE_NAMES))
    return {name.removeprefix("expected_"): body[name] for name in given} or None


def check_fences(expected, current):
    """A stale fence changes nothing: 409 session_fence_conflict with the current fences."""
    if expected is not None and expected != current:
        raise CompozyError("session_fence_conflict", "the transcript changed since those fences were read; "
                           "read the session again", expected=expected, current=current)


@dataclass(frozen=True)
class Cut:
    """A fork point: a durable user message and the turn it belongs to."""

    message_id: str
    turn_id: str
    settled: bool

    def to_dict(self):
        return {"message_id": self.message_id, "turn_id": self.turn_id, "turn_settled": self.settled}


@dataclass(frozen=True)
class Carry:
    """What a derivation would carry from a source right now."""

    bounded: object  # replay.Bounded
    through_turn_id: str | None
    source_turn_in_progress: bool
    source_message_count: int
    cut: Cut | None

    def summary(self):
        document = {"message_count": self.bounded.message_count, "replay_bytes": self.bounded.size,
                    "truncated": self.bounded.truncated, "omitted_count": self.bounded.omitted_count,
                    "source_turn_in_progress": self.source_turn_in_progress,
                    "source_message_count": self.source_message_count, "through_turn_id": self.through_turn_id}
        if self.cut is not None:
            document["cut"] = self.cut.to_dict()
        return document

    def context(self, kind, source):
        return CarriedContext(kind, source.id, source.agent_name, self.bounded.entries,
                              self.bounded.omitted_count, self.bounded.truncated)


def carry(events, limits, prior=None, message_id=None, turn_running=False, *, secrets):
    """The Carry of a source's active transcript records (EventLog.transcript_records, ascending).

    prior: the CarriedContext the source itself carries; turn_running: the source has a turn in
    flight that may have recorded nothing yet; secrets: redacted from the answers' joined text, so
    the carried context holds none (replay.assembled). A message that is no durable user message of
    the transcript is message_not_found."""
    terminals = {e["turn_id"]: e["sequence"] for e in events if e["type"] in TERMINAL}
    last_settled = max(terminals.values(), default=0)
    unsettled = turn_running or any(e["type"] == "user_message" for e in _after(events, last_settled))
    cut, through = None, last_settled
    if message_id is not None:
        cut = _cut(events, terminals, message_id)
        through = terminals[cut.turn_id] if cut.settled else _before_turn(events, cut.turn_id)
    split = len(events) - sum(1 for _ in _after(events, through))
    carried = events[:split]
    messages = fold_history(carried, include_tools=True, secrets=secrets)
    # A cut ends a turn, so no folded message spans it: the rest counts on its own (one pass in all).
    source_messages = len(messages) + len(fold_history(events[split:], include_tools=True, secrets=()))
    if cut is None and unsettled:
        messages.append({"role": "system", "text": RUNNING_NOTE})
    prefix = prior.prefix() if prior else []
    bounded = bound(prefix + messages, *limits, prior.omitted_count if prior else 0,
                    prior.truncated if prior else False)
    through_turn = next((e["turn_id"] for e in reversed(carried) if e["type"] in TERMINAL), None)
    return Carry(bounded, through_turn, unsettled, source_messages, cut)


def _after(events, sequence):
    """The records after sequence, newest first (a walk back from the end, which is where they are)."""
    return takewhile(lambda e: e["sequence"] > sequence, reversed(events))


def _cut(events, terminals, message_id):
    target = next((e for e in events if e["type"] == "user_message"
                   and e["content"].get("message_id") == message_id), None)
    if target is None or not target["turn_id"]:
        raise CompozyError("message_not_found", f"{message_id} is not a durable user message of this session's "
                           "active transcript", message_id=message_id)
    return Cut(message_id, target["turn_id"], target["turn_id"] in terminals)


def _before_turn(events, turn_id):
    return next(e["sequence"] for e in events if e["turn_id"] == turn_id) - 1


def limits_of(config):
    return config["session.derive.max_replay_bytes"], config["session.derive.max_message_bytes"]
