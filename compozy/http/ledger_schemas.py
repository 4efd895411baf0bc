"""The component schemas of the attention inbox and the usage ledger (merged into /api/openapi.json).

Layer 6 (surface), beside compozy/http/schemas.py, whose helpers it uses.
"""

from compozy import validate as v
from compozy.http.schemas import BOOLEAN, INTEGER, NUMBER, OBJECT, STRING, TIMESTAMP, array, enum, nullable, obj, ref

COUNTS = {"type": "object", "additionalProperties": INTEGER}
ACTION = obj(["id", "label", "operation", "with"], id=STRING, label=STRING, kind=nullable(STRING),
             operation=nullable(STRING), content=OBJECT, **{"with": OBJECT})  # content: the form it takes
ITEM = obj(["id", "kind", "session_id", "workspace_id", "created_at", "summary", "actions", "details", "status",
            "resolved_at", "resolution", "changed"], id=STRING, kind=enum(v.ATTENTION_KINDS),
           session_id=nullable(STRING), workspace_id=nullable(STRING), created_at=TIMESTAMP, summary=STRING,
           actions=array(ref("AttentionAction")), details=OBJECT, status=enum(("open", "resolved")),
           resolved_at=nullable(TIMESTAMP), resolution=nullable(STRING), changed=INTEGER)
OPEN = obj(["total", "by_kind", "by_session"], total=INTEGER, by_kind=COUNTS, by_session=COUNTS)

TOKENS = obj(["input", "output", "thought", "cached_read", "cached_write", "total"], input=INTEGER, output=INTEGER,
             thought=INTEGER, cached_read=INTEGER, cached_write=INTEGER, total=INTEGER)
COST = obj(["amount", "currency"], amount=NUMBER, currency=STRING)
SUMS = obj(["turns", "archived_turns", "duration_ms", "tokens", "cost"], turns=INTEGER, archived_turns=INTEGER,
           duration_ms=INTEGER, tokens=TOKENS, cost=array(COST), key=STRING)
TURN = obj(["turn_id", "session_id", "agent", "tokens", "cost", "context", "duration_ms", "ended_at", "archived"],
           turn_id=STRING, session_id=STRING, agent=STRING, provider=nullable(STRING), model=nullable(STRING),
           end=nullable(STRING), tokens=TOKENS, cost=nullable(COST),
           context=nullable(obj(["used", "size"], used=INTEGER, size=INTEGER)), duration_ms=nullable(INTEGER),
           started_at=nullable(TIMESTAMP), ended_at=TIMESTAMP, archived=BOOLEAN, budget_override=nullable(OBJECT))

LEDGER_SCHEMAS = {
    "SessionAttentionAnswer": obj(["attention"], attention=obj(["session_id", "turn_finished"], session_id=STRING,
                                                               turn_finished=BOOLEAN)),
    "NotifierRun": obj(["id", "item_id", "kind", "command", "started_at", "exit_code"], id=STRING, item_id=STRING,
                       kind=STRING, command=array(STRING), started_at=TIMESTAMP, exit_code=nullable(INTEGER),
                       event=STRING, duration_ms=INTEGER, timed_out=BOOLEAN, output=STRING, truncated=BOOLEAN,
                       error=nullable(STRING), skipped=STRING),
    "UsageSums": SUMS,
    "UsageSummaryAnswer": obj(["usage"], usage=obj(["group_by", "since", "until", "groups", "total"],
                                                   group_by=nullable(enum(v.USAGE_GROUPS)), since=nullable(TIMESTAMP),
                                                   until=nullable(TIMESTAMP),
                                                   groups=nullable(array(ref("UsageSums"))), total=ref("UsageSums"),
                                                   groups_count=INTEGER)),
    "SessionUsageAnswer": obj(["usage"], usage=obj(["session_id", "sessions", "turns", "total"], session_id=STRING,
                                                   sessions=array(STRING), turns=array(TURN), total=ref("UsageSums"))),
    "AttentionAction": ACTION,
    "AttentionItem": ITEM,
    "AttentionOpen": OPEN,
    "AttentionList": obj(["items", "open", "sequence"], items=array(ref("AttentionItem")), open=ref("AttentionOpen"),
                         sequence=INTEGER),
    "AttentionAnswer": obj(["item", "action", "result"], item=ref("AttentionItem"), action=STRING,
                           result=nullable(OBJECT)),
}
