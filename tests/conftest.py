import os

import pytest

from llm_lab.example import book_inputs

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def inputs():
    return book_inputs()


@pytest.fixture
def english():
    """The checkers' messages in English for the test, whatever an earlier test set."""
    from llm_lab import exercises

    exercises.set_language("en")
    yield
    exercises.set_language("en")
