"""Which checkpoint references `compozy gc` drops: the retention settings over the references.

Layer 2 (pure). A checkpoint reference is refs/compozy/<session_id>/<checkpoint_id>; the ID is a ULID,
so its first ten characters are the milliseconds it was taken at. A reference goes when its session
no longer exists, when the session keeps more than keep_last newer ones, or when it is older than
keep_for seconds; a tree no reference reaches is then pruned with its blobs.
"""

from compozy.checkpoints.shadow import REF_ROOT

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def taken_at(checkpoint_id):
    """Seconds since the epoch at which a ckpt_<ULID> was made."""
    millis = 0
    for character in checkpoint_id.removeprefix("ckpt_")[:10]:
        millis = millis * 32 + _CROCKFORD.index(character)
    return millis / 1000


def to_drop(refs, sessions, now, keep_last=0, keep_for=0.0):
    """The references (names) retention drops; sessions: the IDs of the sessions that exist."""
    by_session = {}
    for ref in refs:
        session_id, _, checkpoint_id = ref.removeprefix(REF_ROOT + "/").partition("/")
        by_session.setdefault(session_id, []).append((checkpoint_id, ref))
    dropped = []
    for session_id, checkpoints in by_session.items():
        checkpoints.sort(reverse=True)  # newest first: ULIDs sort by time
        for position, (checkpoint_id, ref) in enumerate(checkpoints):
            gone = session_id not in sessions
            surplus = keep_last and position >= keep_last
            expired = keep_for and now - taken_at(checkpoint_id) > keep_for
            if gone or surplus or expired:
                dropped.append(ref)
    return dropped
