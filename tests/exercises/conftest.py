import pytest

from llm_lab import exercises as ex


@pytest.fixture
def fresh_hints():
    """The checkers in English and no hint shown yet (the two-step hints start over), before and after the test."""
    ex.set_language("en")
    ex.reset_hints()
    yield
    ex.set_language("en")
    ex.reset_hints()
