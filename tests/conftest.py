import os

import pytest

from llm_lab.example import book_inputs

os.environ.setdefault("MPLBACKEND", "Agg")


def pytest_configure(config):
    config.addinivalue_line("markers", "grades_a_class: the module's fixture grades a class of submissions in "
                            "sandboxed kernels (about a minute on 2 cores); such modules are collected first")


def pytest_collection_modifyitems(config, items):
    """The modules marked ``grades_a_class`` first (a stable sort), so that `make unit`'s two xdist workers
    (``--dist loadfile --no-loadscope-reorder``) each start on one and the short tests fill in around them,
    instead of a worker finishing alone on the last of them while the other has nothing left."""
    items.sort(key=lambda item: item.get_closest_marker("grades_a_class") is None)


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
