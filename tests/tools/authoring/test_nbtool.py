"""The notebook builder: source format errors, language substitution, re-pointing Colab links."""

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from tools.authoring import nbtool

ROOT = Path(__file__).resolve().parents[3]


def write(tmp_path, text, name="01_demo.nbsrc"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_parse_pairs_languages_and_substitutes_lang(tmp_path):
    src = write(
        tmp_path,
        "%% title\nDemo\n%% title zh\n演示\n%% md\nHello\n%% md zh\n你好\n"
        "%% code tags=checker\nset_language({{LANG}})\n",
    )
    nb = nbtool.build_one(src, "zh", "me/repo", "v1", "learner")
    assert nb.cells[0].source.startswith("# 演示")
    assert "github/me/repo/blob/v1/notebooks/zh/01_demo.ipynb" in nb.cells[0].source
    assert nb.cells[1].source == nbtool.setup_code("me/repo", "v1", "zh")
    assert nb.cells[2].source == "你好"
    assert nb.cells[3].source == 'set_language("zh")' and nb.cells[3].metadata["tags"] == ["checker"]


@pytest.mark.parametrize(
    "text,error",
    [
        ("%% title\nA\n%% title zh\nB\n%% md\nonly english\n%% code\nx = 1\n", "must be followed by '%% md zh'"),
        ("%% title\nA\n%% title zh\nB\n%% md zh\norphan\n", "must follow an English"),
        ("%% title\nA\n%% md\na\n%% md zh\nb\n", "needs '%% title' and '%% title zh'"),
        ("%% title\nA\n%% title zh\nB\n%% cod\nx\n", "bad marker line"),
        ("%% title\nA\n%% title zh\nB\n%% code zh\nx\n", "code is shared by all languages"),
        (
            "%% title\nA\n%% title zh\nB\n%% md\nhi\n%% md ja\nこんにちは\n",
            "unknown language 'ja'.*the languages are en, zh",
        ),
    ],
)
def test_parse_errors_say_what_is_wrong(tmp_path, text, error):
    with pytest.raises(ValueError, match=error):
        nbtool.parse(write(tmp_path, text))


def test_solution_cells_get_nbgrader_metadata(tmp_path):
    src = write(
        tmp_path,
        "%% title\nA\n%% title zh\nB\n%% code tags=solution\n"
        "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n",
    )
    cell = nbtool.build_one(src, "en", "o/r", "main").cells[2]
    assert cell.metadata["nbgrader"]["solution"] is True and cell.metadata["nbgrader"]["grade_id"].startswith("ex01")


def test_set_repo_rewrites_badges_setup_cells_and_readme(tmp_path, monkeypatch):
    for sub in ("notebooks/en", "notebooks/zh"):
        (tmp_path / sub).mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    monkeypatch.setattr(nbtool, "ROOT", tmp_path)
    repo, ref = nbtool.colab_config()
    src = write(tmp_path, "%% title\nA\n%% title zh\nB\n%% code\nprint(1)\n")
    for lang in nbtool.LANGS:
        nb = nbtool.build_one(src, lang, repo, ref, "learner")
        nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
        nbtool.write(nb, tmp_path / "notebooks" / lang / "01_demo.ipynb")
        nbtool.write(nbtool.build_one(src, lang, repo, ref), tmp_path / "notebooks/instructor" / lang / "01_demo.ipynb")
    (tmp_path / "README.md").write_text(
        f"pip install 'x @ git+https://github.com/{repo}@{ref}'\n{nbtool.TABLE_BEGIN}\nold\n{nbtool.TABLE_END}\n"
    )
    monkeypatch.setattr(nbtool, "SRC", tmp_path)
    nbtool.main(["set-repo", "someone/fork", "--ref", "v2.0"])
    assert nbtool.colab_config() == ("someone/fork", "v2.0")
    nb = json.loads((tmp_path / "notebooks/zh/01_demo.ipynb").read_text())
    assert "github/someone/fork/blob/v2.0/notebooks/zh/01_demo.ipynb" in "".join(nb["cells"][0]["source"])
    assert "git+https://github.com/someone/fork@v2.0" in "".join(nb["cells"][1]["source"])
    assert "".join(nb["cells"][2]["outputs"][0]["text"]) == "1\n"  # outputs survive: nothing re-run
    instructor = json.loads((tmp_path / "notebooks/instructor/zh/01_demo.ipynb").read_text())
    assert "git+https://github.com/someone/fork@v2.0" in "".join(instructor["cells"][1]["source"])
    readme = (tmp_path / "README.md").read_text()
    assert "git+https://github.com/someone/fork@v2.0" in readme
    assert "github/someone/fork/blob/v2.0/notebooks/en/01_demo.ipynb" in readme and "old" not in readme
    with pytest.raises(SystemExit, match="owner/name"):
        nbtool.main(["set-repo", "not a repo"])


def test_readmes_list_the_series_with_current_links(capsys):
    assert nbtool.main(["readme", "--check"]) == 0, capsys.readouterr().out


ZH_CELL = (
    "x = 1  # (T, d_out)\n"
    "y = x + 1  # why English  # zh: 为什么\n"
    "# first English line\n"
    "# second English line\n"
    "# zh: 第一行\n"
    "# zh: 第二行\n"
    's = "# zh: not a comment"  # in a string, a marker is code\n'
    "z = y  # a trailing comment\n"
    "# zh: 行尾注释的中文\n"
)


def test_comment_twins_replace_comments_in_zh_and_vanish_in_en():
    en, zh = (nbtool.localize_comments(ZH_CELL, lang) for lang in ("en", "zh"))
    assert en.splitlines() == [
        "x = 1  # (T, d_out)",
        "y = x + 1  # why English",
        "# first English line",
        "# second English line",
        's = "# zh: not a comment"  # in a string, a marker is code',
        "z = y  # a trailing comment",
    ]
    assert zh.splitlines() == [
        "x = 1  # (T, d_out)",
        "y = x + 1  # 为什么",
        "# 第一行",
        "# 第二行",
        's = "# zh: not a comment"  # in a string, a marker is code',
        "z = y  # 行尾注释的中文",
    ]
    assert nbtool.strip_comments(en) == nbtool.strip_comments(zh)
    assert nbtool.strip_comments(zh).splitlines()[:2] == ["x = 1", "y = x + 1"]


@pytest.mark.parametrize(
    "code,error",
    [
        ("x = 1\n# zh: 孤儿\n", "need as many English comments"),
        ("# one\n# zh: 一\n# zh: 二\n", "need as many English comments"),
        ("x = 1  # zh: 代码后面\n", "after code must end an English comment"),
        ("x = 1  # a\ny = 2  # b\n# zh: 甲\n# zh: 乙\n", "whole-line comments only"),
        ("x = (1,\n", "cannot read the comments"),
    ],
)
def test_comment_twin_errors_say_what_is_wrong(code, error):
    with pytest.raises(ValueError, match=error):
        nbtool.localize_comments(code, "zh", at="demo.nbsrc:3")


FIGURE_CELL = (
    "for i in range(2):\n"
    '    ax.set_title(f"head {i}", fontsize=9)  # one per head  # zh: 每个头一个\n'
    '    # zh> ax.set_title(f"{i} 号头", fontsize=9)\n'
    'ax.set_xlabel("key")\n'
    '# zh> ax.set_xlabel("键")\n'
    "# a comment under a code twin\n"
    "# zh: 代码孪生行下面的注释\n"
    'heatmap(w, title="scores",\n'
    '# zh> heatmap(w, title="分数",\n'
    "        lang={{LANG}})\n"
)


def test_code_twins_replace_their_line_in_zh_and_vanish_in_en():
    en, zh = (nbtool.localize_comments(nbtool.localize_code(FIGURE_CELL, lang), lang) for lang in ("en", "zh"))
    assert en.splitlines() == [
        "for i in range(2):",
        '    ax.set_title(f"head {i}", fontsize=9)  # one per head',
        'ax.set_xlabel("key")',
        "# a comment under a code twin",
        'heatmap(w, title="scores",',
        "        lang={{LANG}})",
    ]
    assert zh.splitlines() == [
        "for i in range(2):",
        '    ax.set_title(f"{i} 号头", fontsize=9)  # 每个头一个',
        'ax.set_xlabel("键")',
        "# 代码孪生行下面的注释",
        'heatmap(w, title="分数",',
        "        lang={{LANG}})",
    ]
    (en_code, en_strings), (zh_code, zh_strings) = (nbtool.code_and_strings(c) for c in (en, zh))
    assert en_code == zh_code and en_strings != zh_strings
    assert zh_strings == ['f"{i} 号头"', '"键"', '"分数"']


@pytest.mark.parametrize(
    "code,error",
    [
        ('x = "a"\n# zh> y = "b"\n', "may change only the strings"),
        ('x = "a"\n# zh> x = "b" + "c"\n', "may change only the strings"),
        ('ax.plot(t, label="T")\n# zh> ax.plot(t, label="T", lw=2)\n', "may change only the strings"),
        ('# a comment\n# zh> x = "b"\n', "right under the code line it translates"),
        ('\n# zh> x = "b"\n', "right under the code line it translates"),
        ('x = "a"  # zh> x = "b"\n', "stands on a line of its own"),
        ('x = "a"\n# zh> x = "b"\n# zh> x = "c"\n', "already has a '# zh>' twin"),
        ('f("a")\n# zh> f("b"\n', "cannot read this code"),
    ],
)
def test_code_twin_errors_say_what_is_wrong(code, error):
    with pytest.raises(ValueError, match=error):
        nbtool.localize_code(code, "zh", at="demo.nbsrc:3")


def test_builder_draws_the_figures_words_in_each_language(tmp_path):
    src = write(
        tmp_path,
        '%% title\nA\n%% title zh\nB\n%% code\nax.set_title("key", lang={{LANG}})\n'
        '# zh> ax.set_title("键", lang={{LANG}})\n',
    )
    zh, en = (nbtool.build_one(src, lang, "o/r", "main").cells[2].source for lang in ("zh", "en"))
    assert zh == 'ax.set_title("键", lang="zh")'
    assert en == 'ax.set_title("key", lang="en")'
    assert nbtool.untranslated(src) == []  # a code twin is code, not a comment lacking its twin


def test_builder_translates_comments_and_lists_the_missing_twins(tmp_path):
    src = write(
        tmp_path,
        "%% title\nA\n%% title zh\nB\n%% code\nx = 1  # keep it small  # zh: 保持小\ny = 2  # the second value\n",
    )
    zh, en = (nbtool.build_one(src, lang, "o/r", "main").cells[2].source for lang in ("zh", "en"))
    assert zh == "x = 1  # 保持小\ny = 2  # the second value"
    assert en == "x = 1  # keep it small\ny = 2  # the second value"
    assert nbtool.untranslated(src) == ["01_demo.nbsrc:5+2: y = 2  # the second value"]


@pytest.mark.parametrize(
    "comment,prose",
    [
        ("# (B, nh, T, hs)", False),
        ("# (T, d_out)", False),
        ("# NBVAL_IGNORE_OUTPUT", False),
        ("# Your     (x^1)", False),
        ("# 中文注释", False),
        ("### BEGIN SOLUTION", False),
        ("# (B, nh, rows, cols)", False),
        ("# (T, T): row = query", True),
        ("# zero the future", True),
    ],
)
def test_needs_twin_tells_prose_from_code(comment, prose):
    assert nbtool.needs_twin(comment) is prose


def test_a_third_language_needs_no_new_grammar(tmp_path, monkeypatch):
    """With 'ja' in the language list, '%% md ja' / '%% title ja' and '# ja:' twins work like zh's."""
    from tools.authoring import _comments

    monkeypatch.setattr(nbtool, "LANGS", ("en", "zh", "ja"))
    monkeypatch.setattr(nbtool, "TWINS", ("zh", "ja"))
    monkeypatch.setattr(_comments, "TWIN_LINE", _comments.twin_patterns(("zh", "ja"))[0])
    monkeypatch.setattr(_comments, "TWIN_INLINE", _comments.twin_patterns(("zh", "ja"))[1])
    src = write(
        tmp_path,
        "%% title\nDemo\n%% title zh\n演示\n%% title ja\nデモ\n"
        "%% md\nHello\n%% md zh\n你好\n%% md ja\nこんにちは\n"
        "%% code\nx = 1  # one  # zh: 一  # ja: いち\n# why\n# zh: 为什么\n# ja: なぜ\ny = 2\n",
    )
    spec = nbtool.parse(src)
    assert spec["title"] == {"en": "Demo", "zh": "演示", "ja": "デモ"}
    assert spec["cells"][0] == {"type": "md", "en": "Hello", "zh": "你好", "ja": "こんにちは", "tags": []}
    code = spec["cells"][1]["source"]
    assert nbtool.localize_comments(code, "ja") == "x = 1  # いち\n# なぜ\ny = 2"
    assert nbtool.localize_comments(code, "zh") == "x = 1  # 一\n# 为什么\ny = 2"
    assert nbtool.localize_comments(code, "en") == "x = 1  # one\n# why\ny = 2"
    missing = write(
        tmp_path, "%% title\nD\n%% title zh\n演\n%% title ja\nデ\n%% md\nHi\n%% md zh\n你好\n", name="02_demo.nbsrc"
    )
    with pytest.raises(ValueError, match="must be followed by '%% md zh' then '%% md ja'"):
        nbtool.parse(missing)
