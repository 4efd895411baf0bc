"""What vulture cannot see used, for tests/unit/test_dead_code.py: never imported, never run.

Each line names one use that happens behind vulture's back (a library reads an attribute, a
dispatcher calls a method by name, a schema iterates an enum). Anything used only by tests is
dead code and does not belong here.
"""

_ = object  # vulture's whitelist form: `_.name` marks name used

# pexpect and Flask read these attributes of objects we configure
_.crlf  # compozy/acp/driver.py: pexpect's line ending
_.delaybeforesend  # compozy/acp/driver.py: pexpect's pause before each write
_._buf  # compozy/acp/driver.py: pexpect's read buffer, reset with the spawn
_.sort_keys  # compozy/http/app.py: Flask's JSON provider

# peewee reads its models' Meta and columns by declaration
_.parent_session_id  # compozy/store/catalog.py and store/derivations.py: columns read as rows
_.root_session_id
_.spawn_depth
_.lineage_kind
_.resolved_at
_.child_session_id
_.last_heartbeat  # compozy/fleet/catalog.py: the fleet catalog's columns, written and read in SQL
_.runtime_status
_.acquired_at
_.previous_node

# Observers.emit calls a subscriber's method by the signal's name (session/records/observers.py)
_.state_changed
_.appended
_.removed
_.agent_exited
_.failure_changed
_.closing

# written and read through dataclasses.fields (session/records/record.py)
_.stopped_at

# the schemas and validate iterate these enums: every member is wire vocabulary
_.ALLOW_ONCE  # PermissionDecision
_.ALLOW_ALWAYS
_.REJECT_ALWAYS

# the state tables, walked whole by the edge-coverage checks (tests/test_spec_sanity.py)
_.MACHINES
_.edge_names

# the CLI client's error carries its HTTP status for a caller that needs it (the scenario harness)
_.http_status
# an event store says whether it holds its file open (the cost of a read that need not open it)
_.is_open
