"""Pure parts of issue 26: redacting a secret across the chunks that split it, and the search index's choice of
order for a word too common to rank."""

import pytest

from compozy.redact import REPLACEMENT, redact_pieces
from compozy.store import searchindex
from compozy.store.searchindex import QuerySyntaxError, SearchIndex

SECRET = "hunter2-secret-value"


@pytest.mark.parametrize("cut", range(1, len(SECRET)))
def test_a_secret_split_anywhere_is_cut_from_every_piece(cut):
    pieces = ["before ", SECRET[:cut], SECRET[cut:], " after"]
    redacted = redact_pieces(pieces, {SECRET})
    assert len(redacted) == len(pieces) and "".join(redacted) == f"before {REPLACEMENT} after"
    assert not any(part in piece for piece in redacted for part in (SECRET[:cut], SECRET[cut:]) if len(part) > 3)


def test_pieces_without_a_secret_and_two_secrets_side_by_side():
    assert redact_pieces(["a", "b"], {SECRET}) == ["a", "b"]
    assert redact_pieces(["x" + SECRET[:3], SECRET[3:] + SECRET[:5], SECRET[5:]], {SECRET}) == \
        ["x" + REPLACEMENT, REPLACEMENT, ""]


@pytest.fixture
def index(tmp_path, monkeypatch):
    monkeypatch.setattr(searchindex, "RANKED_AT_MOST", 4)
    index = SearchIndex(tmp_path / "search.db")
    with index.writing() as writer:
        writer.session("sess_a", "ws_a", "general", False, 0)
        for number in range(5):
            writer.add("sess_a", "user", f"m{number}", "turn_a", number + 1, "2026-01-01T00:00:00.000000Z",
                       "common " + ("rare " * number))
    yield index
    index.close()


FILTERS = {"equal": {}, "archived": "include", "rewound": False}


def test_a_word_in_more_messages_than_can_be_ranked_comes_newest_first(index):
    hits, _, order = index.search("common", FILTERS, 10, 0)
    assert order == "newest" and [hit["sequence"] for hit in hits] == [5, 4, 3, 2, 1]
    hits, _, order = index.search("rare", FILTERS, 10, 0)
    assert order == "best" and hits[0]["sequence"] == 5  # four times "rare": the best match


def test_a_query_sqlite_cannot_parse_is_a_syntax_error(index):
    for query in ('"open', "common AND", "(common", "nosuchcolumn: common"):
        with pytest.raises(QuerySyntaxError):
            index.search(query, FILTERS, 10, 0)
