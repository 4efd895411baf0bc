"""The records EventLog.append returns: they render their own JSON around the row's content text.

Layer 2. A live record is encoded for every viewer of every stream that shows it; its content was
encoded once already, for its row, with the same encoder. Records are never changed once published
(every reader shares them).
"""

from json.encoder import encode_basestring_ascii as _quote  # a string as compact_json writes it

from compozy.text import compact_json

RECORD_KEYS = ("id", "session_id", "sequence", "turn_id", "type", "agent_name", "workspace_id", "content", "timestamp")


class StoredRecord(dict):
    """A record as append returned it; content_json is its content's JSON text as the row stores it."""

    __slots__ = ("content_json", "_json")

    @classmethod
    def of(cls, fields, content_json):
        record = cls(fields)
        record.content_json, record._json = content_json, None
        return record

    def json(self):
        """The same text as compact_json(self), built once."""
        if self._json is None:
            try:
                plain = tuple(self) == RECORD_KEYS and self["sequence"].__class__ is int
                self._json = _record_json(self, self.content_json) if plain else compact_json(self)
            except TypeError:  # a value of another type than append writes (_quote takes strings only)
                self._json = compact_json(self)
        return self._json


def _record_json(record, content_json):
    turn_id, agent_name = record["turn_id"], record["agent_name"]
    return (f'{{"id":{_quote(record["id"])},"session_id":{_quote(record["session_id"])},'
            f'"sequence":{record["sequence"]},"turn_id":{"null" if turn_id is None else _quote(turn_id)},'
            f'"type":{_quote(record["type"])},"agent_name":{"null" if agent_name is None else _quote(agent_name)},'
            f'"workspace_id":{_quote(record["workspace_id"])},"content":{content_json},'
            f'"timestamp":{_quote(record["timestamp"])}}}')
