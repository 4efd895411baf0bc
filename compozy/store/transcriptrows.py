"""The records a transcript folds from (user and agent messages, tool results, turn ends), read from a
session's store in one scan.

Layer 2. An agent chunk contributes only its text, which SQLite extracts (no id, no timestamp), so the
thousands of chunks of a long session are never decoded in Python; the other records come whole.
Consecutive chunks of one turn come as one agent_message record, their texts joined, placed at the
first chunk's sequence: fold_history folds them into the same message either way, and no point a
transcript is cut at (a turn's end, the record before a turn) falls inside such a run.
"""

import json

TRANSCRIPT_SQL = ("SELECT sequence, turn_id, type, "
                  "CASE type WHEN 'agent_message' THEN COALESCE(json_extract(content, '$.text'), '') END, "
                  "CASE type WHEN 'agent_message' THEN NULL ELSE id END, "
                  "CASE type WHEN 'agent_message' THEN NULL ELSE timestamp END, "
                  "CASE type WHEN 'agent_message' THEN NULL ELSE content END "
                  # a scan in sequence order (`+type`): the type index would cost a sort of most of the table
                  "FROM events WHERE archived = 0 AND +type IN ('user_message', 'agent_message', "
                  "'tool_result', 'done', 'error') AND sequence <= ? ORDER BY sequence")


def transcript_records(db, through_sequence):
    """The active records through through_sequence, ascending, runs of chunks joined."""
    records, runs, run_turn = [], [], None
    texts = None  # the texts of the run of chunks the previous row belongs to
    for sequence, turn_id, kind, text, event_id, timestamp, content in db.execute_sql(TRANSCRIPT_SQL,
                                                                                     (through_sequence,)):
        if kind != "agent_message":
            texts = None
            records.append({"id": event_id, "sequence": sequence, "turn_id": turn_id, "type": kind,
                            "timestamp": timestamp, "content": json.loads(content)})
        elif texts is not None and turn_id == run_turn:
            texts.append(text)
        else:
            texts, run_turn = [text], turn_id
            record = {"id": None, "sequence": sequence, "turn_id": turn_id, "type": kind, "timestamp": None,
                      "content": {}}
            records.append(record)
            runs.append((record, texts))
    for record, parts in runs:
        record["content"]["text"] = "".join(parts)
    return records
