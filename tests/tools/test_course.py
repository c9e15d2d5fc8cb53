"""tools.course, the course model every tool shares: one meaning of NB= everywhere, the two stored versions."""

import pytest

from tools import course
from tools.authoring import nbtool
from tools.release import standalone
from tools.teaching import student


@pytest.mark.parametrize(
    ("only", "numbers"),
    [(None, None), ("", None), ("0", ("00",)), ("3", ("03",)), ("03,6", ("03", "06")), (" 1, 08 ", ("01", "08"))],
)
def test_nb_means_notebook_numbers(only, numbers):
    assert course.parse_only(only) == numbers


@pytest.mark.parametrize("bad", ["1a", "123", ",", "01;02"])
def test_a_bad_nb_names_what_is_allowed(bad):
    with pytest.raises(ValueError, match="notebook numbers such as 01,03"):
        course.parse_only(bad)


@pytest.mark.parametrize("only", ["0", "3", "03,6", None])
def test_every_tool_selects_the_same_notebooks(only):
    """NB=0 is notebook 00 for the builder, the student copies, the wheel's nbval run and the course model alike
    (it once meant every notebook to some tools and none to others)."""
    want = course.parse_only(only)
    builder = {p.name[:2] for p in nbtool.sources(only)}
    copies = {p.name[:2] for p in student.find_notebooks(course.INSTRUCTOR, only)}
    wheel = {p.name[:2] for p in standalone.select(list(course.LANGS), only, ("learner", "instructor"))}
    model = {p.name[:2] for p in course.select(only, versions=course.VERSIONS)}
    assert builder == copies == wheel == model
    assert want is None or model == set(want)


def test_versions_live_where_the_tools_look():
    assert course.version_dir("learner") == course.NOTEBOOKS
    assert course.version_dir("instructor") == course.NOTEBOOKS / "instructor" == course.INSTRUCTOR
    names = {lang: [p.name for p in course.select(versions=("learner",), langs=(lang,))] for lang in course.LANGS}
    assert names["en"] == names["zh"] == [p.name for p in course.select(langs=("en",))]
    with pytest.raises(ValueError, match="unknown notebook version 'student'"):
        course.version_dir("student")
