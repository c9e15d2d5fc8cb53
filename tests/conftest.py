import os

import pytest

from llm_lab.example import book_inputs

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture
def inputs():
    return book_inputs()
