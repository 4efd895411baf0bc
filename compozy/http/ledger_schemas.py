"""The component schemas of the attention inbox and the usage ledger (merged into /api/openapi.json).

Layer 6 (surface), beside compozy/http/schemas.py, whose helpers it uses.
"""

from compozy import validate as v
from compozy.http.schemas import BOOLEAN, INTEGER, NUMBER, OBJECT, STRING, TIMESTAMP, array, enum, nullable, obj, ref

COUNTS = {"type": "object", "additionalProperties": INTEGER}
ACTION = obj(["id", "label", "operation", "with"], id=STRING, label=STRING, kind=nullable(STRING),
             operation=nullable(STRING), **{"with": OBJECT})
ITEM = obj(["id", "kind", "session_id", "workspace_id", "created_at", "summary", "actions", "details", "status",
            "resolved_at", "resolution", "changed"], id=STRING, kind=enum(v.ATTENTION_KINDS),
           session_id=nullable(STRING), workspace_id=nullable(STRING), created_at=TIMESTAMP, summary=STRING,
           actions=array(ref("AttentionAction")), details=OBJECT, status=enum(("open", "resolved")),
           resolved_at=nullable(TIMESTAMP), resolution=nullable(STRING), changed=INTEGER)
OPEN = obj(["total", "by_kind", "by_session"], total=INTEGER, by_kind=COUNTS, by_session=COUNTS)

LEDGER_SCHEMAS = {
    "AttentionAction": ACTION,
    "AttentionItem": ITEM,
    "AttentionOpen": OPEN,
    "AttentionList": obj(["items", "open", "sequence"], items=array(ref("AttentionItem")), open=ref("AttentionOpen"),
                         sequence=INTEGER),
    "AttentionAnswer": obj(["item", "action", "result"], item=ref("AttentionItem"), action=STRING,
                           result=nullable(OBJECT)),
}
