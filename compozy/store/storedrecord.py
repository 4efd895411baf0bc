"""The records EventLog.append returns: they render their own JSON, and their own stream frame, around the
row's content text.

Layer 2. A live record is encoded for every viewer of every stream that shows it; its content was
encoded once already, for its row, with the same encoder. What the records of one commit share (the
session's fields, the timestamp, each turn/type/agent triple) is encoded once for the batch (Batch).
Records are never changed once published (every reader shares them).
"""

from json.encoder import encode_basestring_ascii as _quote  # a string as compact_json writes it

from compozy.text import compact_json

RECORD_KEYS = ("id", "session_id", "sequence", "turn_id", "type", "agent_name", "workspace_id", "content", "timestamp")


class Batch:
    """The JSON text the records of one commit share: around the ID and the sequence, the session's ID; after
    them, one middle for each turn, type and agent name, then the content, then the timestamp."""

    __slots__ = ("session", "tail", "_workspace", "_middles")

    def __init__(self, session_id, workspace_id, timestamp):
        self.session = f',"session_id":{_quote(session_id)},"sequence":'
        self._workspace = f',"workspace_id":{_quote(workspace_id)},"content":'
        self.tail = f',"timestamp":{_quote(timestamp)}}}'
        self._middles = {}

    def middle(self, turn_id, kind, agent_name):
        key = (turn_id, kind, agent_name)
        text = self._middles.get(key)
        if text is None:
            text = self._middles[key] = (f',"turn_id":{_nullable(turn_id)},"type":{_quote(kind)},'
                                         f'"agent_name":{_nullable(agent_name)}{self._workspace}')
        return text


class StoredRecord(dict):
    """A record as append returned it; content_json is its content's JSON text as the row stores it."""

    __slots__ = ("content_json", "_batch", "_frame")

    @classmethod
    def of(cls, fields, content_json, batch=None):
        """batch: the Batch of the commit that stored fields (None: the JSON is encoded whole)."""
        record = cls(fields)
        record.content_json, record._batch, record._frame = content_json, batch, None
        return record

    def json(self):
        """The same text as compact_json(self)."""
        frame = self.frame()
        return frame[frame.index("data: ") + 6:-2]

    def frame(self):
        """Its stream frame, `id: SEQUENCE`, `event: TYPE`, `data: JSON`: the same text as
        compozy.http.sse.frame(self["type"], dict(self)), built once."""
        if self._frame is None:
            self._frame = f"id: {self['sequence']}\nevent: {self['type']}\ndata: {self._json()}\n\n"
        return self._frame

    def _json(self):
        batch = self._batch
        try:
            if batch is None or len(self) != len(RECORD_KEYS) or self["sequence"].__class__ is not int:
                return compact_json(self)
            return (f'{{"id":{_quote(self["id"])}{batch.session}{self["sequence"]}'
                    f'{batch.middle(self["turn_id"], self["type"], self["agent_name"])}{self.content_json}{batch.tail}')
        except TypeError:  # a value of another type than append writes (_quote takes strings only)
            return compact_json(self)


def _nullable(text):
    return "null" if text is None else _quote(text)
