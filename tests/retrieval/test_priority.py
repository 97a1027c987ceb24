"""The order files are converted in: recently changed items, then items cited in the user's
recent answers, then the rest (`zocrates_retrieval.domain.priority`)."""

from __future__ import annotations

from datetime import UTC, datetime

from zocrates_retrieval.domain.priority import MAX_CITED, file_order, merge_cited, promote, recent_since

NOW = datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC)
SINCE = recent_since(NOW, 30)


def order(files, cited, since=SINCE):
    """The names of `files` ((name, (library, item), modified)) in conversion order."""
    return [name for name, *_ in file_order(files, lambda f: (f[1], f[2]), cited, since)]


def test_the_recent_window_ends_now_and_is_written_as_zotero_writes_dates():
    assert SINCE == "2026-11-02 12:00:00"
    assert recent_since(NOW, 0.5) == "2026-12-02 00:00:00"
    assert recent_since(NOW, 0) is None


def test_recent_items_first_then_cited_ones_most_recently_cited_first_then_the_rest_newest_first():
    files = [
        ("old", ("user", "OLD00000"), "2020-01-01 00:00:00"),
        ("cited-long-ago", ("user", "CITED002"), "2019-05-05 00:00:00"),
        ("recent", ("user", "RECENT01"), "2026-11-20 08:00:00"),
        ("older", ("user", "OLDER000"), "2018-01-01 00:00:00"),
        ("cited-last", ("user", "CITED001"), "2015-01-01 00:00:00"),
        ("newest", ("user", "NEWEST01"), "2026-12-01 09:00:00"),
        ("no-date", ("user", "NODATE00"), ""),
        ("middle", ("user", "MIDDLE00"), "2024-03-03 00:00:00"),
    ]
    cited = [("user", "CITED001"), ("user", "CITED002"), ("user", "NOFILE00")]
    assert order(files, cited) == [
        "newest",
        "recent",
        "cited-last",
        "cited-long-ago",
        "middle",
        "old",
        "older",
        "no-date",
    ]


def test_without_citations_or_a_window_files_go_newest_first():
    files = [("a", ("user", "A"), "2020-01-01 00:00:00"), ("b", ("user", "B"), "2026-12-01 00:00:00")]
    assert order(files, []) == ["b", "a"]
    assert order(files, [("user", "A")], since=None) == ["a", "b"]  # no window: the cited one first


def test_an_item_both_recent_and_cited_is_placed_once_among_the_recent():
    files = [
        ("cited", ("user", "CITED000"), "2021-01-01 00:00:00"),
        ("both", ("user", "BOTH0000"), "2026-11-30 00:00:00"),
        ("recent", ("user", "RECENT00"), "2026-12-01 00:00:00"),
    ]
    assert order(files, [("user", "BOTH0000"), ("user", "CITED000")]) == ["recent", "both", "cited"]


def test_ties_keep_their_order_and_all_files_of_a_cited_item_go_together():
    same = "2022-02-02 00:00:00"
    files = [
        ("x1", ("user", "X"), same),
        ("y", ("user", "Y"), same),
        ("x2", ("user", "X"), same),
        ("z", ("user", "Z"), same),
        ("r1", ("user", "R"), "2026-12-01 00:00:00"),
        ("r2", ("user", "R"), "2026-12-01 00:00:00"),
    ]
    assert order(files, [("user", "Z"), ("user", "X")]) == ["r1", "r2", "z", "x1", "x2", "y"]
    assert order(files, [("user", "X"), ("user", "X")]) == ["r1", "r2", "x1", "x2", "y", "z"]


def test_an_item_key_is_cited_within_its_library():
    files = [
        ("group", ("group-7", "SAMEKEY0"), "2021-01-01 00:00:00"),
        ("mine", ("user", "SAMEKEY0"), "2020-01-01 00:00:00"),
    ]
    assert order(files, [("user", "SAMEKEY0")]) == ["mine", "group"]


def test_recently_cited_items_are_the_latest_answers_first_each_once_and_bounded():
    known = [(("user", "B"), 20.0), (("user", "C"), 10.0)]
    merged = merge_cited(known, [("user", "A"), ("user", "C"), ("user", "A")], at=30.0)
    assert merged == [(("user", "A"), 30.0), (("user", "C"), 30.0), (("user", "B"), 20.0)]
    # an answer noted late (another replica, a redelivery) sorts by when it finished
    late = merge_cited(merged, [("user", "D"), ("user", "A")], at=15.0)
    assert [ref for ref, _ in late] == [("user", "A"), ("user", "C"), ("user", "B"), ("user", "D")]
    assert late[0] == (("user", "A"), 30.0)
    many = merge_cited([], [("user", f"K{n:07d}") for n in range(MAX_CITED + 50)], at=1.0)
    assert len(many) == MAX_CITED and many[0] == (("user", "K0000000"), 1.0)
    more = merge_cited(many, [("user", "NEW00000")], at=2.0)
    assert len(more) == MAX_CITED and [ref for ref, _ in more[:2]] == [("user", "NEW00000"), ("user", "K0000000")]
    assert merge_cited(many, [("user", "OLD00000")], at=0.5) == many  # older than all it keeps


def test_promoting_moves_the_files_of_just_cited_items_to_the_front():
    pending = [("a", ("user", "A")), ("b", ("user", "B")), ("c", ("user", "C")), ("b2", ("user", "B"))]
    moved = promote(pending, lambda f: f[1], [("user", "C"), ("user", "B"), ("user", "GONE0000")])
    assert [name for name, _ in moved] == ["c", "b", "b2", "a"]
    assert promote(pending, lambda f: f[1], []) == pending
