"""A page of a session's history: whole messages near a cursor, read in keyset batches of rows.

Layer 2. A message begins at a user_message, or at an agent_message that does not continue the
history row before it (an agent_message of the same turn): fold_history folds the same way. A page
reads the rows of its messages and a few rows either side, never the rest of the session.
"""

from compozy.store.eventlog import ARCHIVE_SQL, SQLITE_MAX

# The user and agent messages, their text and message ids extracted by SQLite; a scan in sequence
# order from the cursor (`+type`: the type index would cost a sort; NOT INDEXED cannot name a view).
ROWS_SQL = ("SELECT sequence, id, turn_id, type, timestamp, COALESCE(json_extract(content, '$.text'), ''), "
            "json_extract(content, CASE type WHEN 'user_message' THEN '$.message_id' ELSE '$.agent_message_id' "
            "END) FROM events WHERE +type IN ('user_message', 'agent_message') AND {archive} "
            "AND sequence {op} ? ORDER BY sequence {order} LIMIT ?")
FIRST_BATCH, MAX_BATCH = 16, 1024  # batches double: a page near its cursor reads few rows past it
KEYS = {"user_message": "message_id", "agent_message": "agent_message_id"}
SEQUENCE, TURN, TYPE = 0, 2, 3


def _continues(row, previous):
    """Whether `row` folds into the message of the history row just before it."""
    return (previous is not None and row[TYPE] == "agent_message" and previous[TYPE] == "agent_message"
            and row[TURN] == previous[TURN])


def _rows(db, archive, cursor, descending):
    """History rows after (or, descending, before) a cursor, one batch at a time, until none are left."""
    sql = ROWS_SQL.format(archive=ARCHIVE_SQL[archive], op="<" if descending else ">",
                          order="DESC" if descending else "ASC")
    size = FIRST_BATCH
    while True:
        batch = db.execute_sql(sql, (cursor, size)).fetchall()
        yield from batch
        if len(batch) < size:
            return
        cursor, size = batch[-1][SEQUENCE], min(size * 2, MAX_BATCH)


def _newest(db, archive, before, limit):
    """The newest `limit` messages beginning before `before`: (rows ascending, starts, older exist)."""
    rows, starts = [], []
    for row in _rows(db, archive, before, descending=True):
        if rows and not _continues(rows[-1], row):
            starts.append(rows[-1][SEQUENCE])
            if len(starts) == limit:
                return rows[::-1], starts[::-1], True
        rows.append(row)
    if rows:
        starts.append(rows[-1][SEQUENCE])
    return rows[::-1], starts[::-1], False


def _tail(db, archive, before, last):
    """The rows from `before` on that continue the message of `last`: (rows, newer messages exist)."""
    rows, previous = [], last
    for row in _rows(db, archive, before - 1, descending=False):
        if not _continues(row, previous):
            return rows, True
        rows.append(row)
        previous = row
    return rows, False


def _oldest(db, archive, after, before, limit):
    """The oldest `limit` messages beginning after `after` (and before `before`):
    (rows, starts, older exist, newer exist)."""
    previous = next(_rows(db, archive, min(after + 1, SQLITE_MAX), descending=True), None)
    older, rows, starts = previous is not None, [], []
    for row in _rows(db, archive, after, descending=False):
        start = not _continues(row, previous)
        previous = row
        if start and (len(starts) == limit or row[SEQUENCE] >= before):
            return rows, starts, older, True
        if start:
            starts.append(row[SEQUENCE])
        if starts:
            rows.append(row)
    return rows, starts, older, False


def _records(rows):
    """One record per message, its chunks' text joined: fold_history answers the same, at a record
    per message instead of one per chunk."""
    records, texts, previous = [], [], None
    for row in rows:
        if not _continues(row, previous):
            records.append({"id": row[1], "sequence": row[0], "turn_id": row[2], "type": row[3],
                            "timestamp": row[4], "content": {KEYS[row[3]]: row[6]}})
            texts.append([])
        texts[-1].append(row[5])
        previous = row
    for record, parts in zip(records, texts):
        record["content"]["text"] = "".join(parts)
    return records


def page(log, archive="active", after_sequence=None, before_sequence=None, limit=200):
    """(records, page) of whole messages: the oldest `limit` after after_sequence, else the newest
    `limit` before before_sequence (else of the session). A message is placed by its first event's
    sequence; records are the history records fold_history folds, in ascending order."""
    before = SQLITE_MAX if before_sequence is None else before_sequence
    with log._read() as db:  # noqa: SLF001 (a read of the store's own connection, like hookruns)
        if after_sequence is not None:
            rows, starts, older, newer = _oldest(db, archive, after_sequence, before, limit)
        else:
            rows, starts, older = _newest(db, archive, before, limit)
            newer = False
            if rows and before_sequence is not None:
                tail, newer = _tail(db, archive, before, rows[-1])
                rows += tail
    return _records(rows), {"has_more": older, "before_sequence": starts[0] if starts else None,
                     "has_newer": newer, "after_sequence": starts[-1] if starts else None}
