"""The round-3 hostile corpus (issue 21) is large enough and covers every class."""

from __future__ import annotations

from pathlib import Path

from . import (
    test_hostile_environment,
    test_hostile_files,
    test_hostile_folders,
    test_hostile_limits,
    test_hostile_terminal,
)

HOSTILE = Path(__file__).parent / "hostile"
CLASSES = {
    "1 folders partly the user's": test_hostile_folders.CASES,
    "2-3 special files and the cache": test_hostile_files.CORPUS,
    "4 terminal escapes": [*test_hostile_terminal.CORPUS, *sorted((HOSTILE / "escapes").glob("*.yaml"))],
    "5 the environment": test_hostile_environment.CORPUS,
    "6-8 limits, answers, messages": [
        *test_hostile_limits.CORPUS,
        *sorted((HOSTILE / "limits").glob("*.yaml")),
        *sorted((HOSTILE / "messages").glob("*.yaml")),
    ],
}


def test_round_three_corpus_is_large_enough_and_covers_every_class():
    assert all(len(cases) >= 4 for cases in CLASSES.values()), {k: len(v) for k, v in CLASSES.items()}
    assert sum(len(cases) for cases in CLASSES.values()) >= 60
