"""Rows of a store in the packed layout (store/eventschema.py: layout 2), written so that its `events`
view reads them back as the same text, byte for byte.

Layer 2. What a chunk row repeats is stored once: its turn ID (in event_turns) and its message's
agent_message_id (in event_messages), each referenced by a small integer, and the batch's timestamp
(in event_times: one row a commit). A content is cut only when its text ends with its agent_message_id
(checked against the text itself; any other is stored as it is), so the view's answer is the text the
record was published with.
"""

import functools
from json.encoder import encode_basestring_ascii as _quote  # a string as compact_json writes it

INSERT_PACKED = "INSERT INTO event_rows (sequence, id, turn, type, agent_name, content, message, archived, time) VALUES "
PACKED_ROW = "(?, ?, ?, ?, ?, ?, ?, 0, ?)"
STATEMENT_ROWS = (64, 8, 1)  # the row counts of the statements a batch is written with, largest first
MESSAGE_KEY = "agent_message_id"
TURNS = ("event_turns", "turn", "turn_id")  # (table, key column, value column)
MESSAGES = ("event_messages", "message", "quoted")


def cut_message(text, content, suffixes=None):
    """(the content's text without its trailing agent_message_id, that id as JSON text), or (text, None)
    when the text does not end with it (the view appends `,"agent_message_id":<quoted>}` to the first).
    suffixes: a dict that keeps each message ID's quoted form and suffix for the next row of a batch."""
    message_id = content.get(MESSAGE_KEY) if isinstance(content, dict) else None
    if message_id.__class__ is not str:
        return text, None
    found = suffixes.get(message_id) if suffixes is not None else None
    if found is None:
        quoted = _quote(message_id)
        found = (quoted, f',"{MESSAGE_KEY}":{quoted}}}')
        if suffixes is not None:
            suffixes[message_id] = found
    quoted, suffix = found
    if not text.endswith(suffix):
        return text, None
    return text[:-len(suffix)] + "}", quoted


class Packer:
    """The integer keys of one store's turns and messages, looked up once per store and cached; used
    under the store's write lock only."""

    def __init__(self):
        self._turns, self._messages = {}, {}

    def forget(self):
        """Drop the cache: the keys added in a transaction that rolled back are not in the file."""
        self._turns.clear()
        self._messages.clear()

    def insert(self, db, rows, items):
        """rows: (sequence, id, turn_id, type, agent_name, content text, timestamp) as layout 1 stores
        them, one timestamp for all; items: the (type, turn_id, content, agent_name) they were made from."""
        if not rows:
            return
        time = db.execute_sql("INSERT INTO event_times (timestamp) VALUES (?)", (rows[0][6],)).lastrowid
        packed, suffixes = [], {}
        for (sequence, event_id, turn_id, kind, agent_name, text, _), item in zip(rows, items):
            text, quoted = cut_message(text, item[2], suffixes)
            turn = None if turn_id is None else self._turns.get(turn_id) or self._key(db, TURNS, turn_id)
            message = None if quoted is None else self._messages.get(quoted) or self._key(db, MESSAGES, quoted)
            packed.append((sequence, event_id, turn, kind, agent_name, text, message, time))
        insert_rows(db, INSERT_PACKED, PACKED_ROW, packed)

    def _key(self, db, keys, value):
        """The value's key in its table (added when new), cached."""
        table, key_column, value_column = keys
        db.execute_sql(f"INSERT OR IGNORE INTO {table} ({value_column}) VALUES (?)", (value,))
        key = db.execute_sql(f"SELECT {key_column} FROM {table} WHERE {value_column} = ?", (value,)).fetchone()[0]
        (self._turns if keys is TURNS else self._messages)[value] = key
        return key


def insert_rows(db, head, row_marks, rows):
    """INSERT rows a few statements at a time: a statement of up to 64 rows is one step, where executemany steps
    each row alone, and every step lets go of the GIL. Taking it back once per row behind the stream's other
    threads cost the agent's reader more than the rows themselves (docs/performance.md)."""
    cursor, start = db.cursor(), 0
    for size, statement in _statements(head, row_marks):
        while len(rows) - start >= size:
            cursor.execute(statement, [value for row in rows[start:start + size] for value in row])
            start += size


@functools.cache
def _statements(head, row_marks):
    """(rows, SQL) of the statements insert_rows uses, largest first: the same text each time, so that
    sqlite3's statement cache finds it prepared."""
    return tuple((size, head + ", ".join([row_marks] * size)) for size in STATEMENT_ROWS)
