"""Build the font the Chinese figures draw with, a small subset of Noto Sans CJK SC (OFL), shipped in data/.

    .venv/bin/python -m tools.authoring.figure_font check     # the shipped font covers every zh figure string
    .venv/bin/python -m tools.authoring.figure_font build --source NotoSansCJK-Regular.ttc  # see data/README.md

Colab and a fresh machine have no CJK font, so a Chinese title would draw as boxes with a "Glyph ... missing"
warning. ``llm_lab.explore.plotting`` registers the shipped subset with matplotlib after the default family: Latin
text keeps matplotlib's own font, CJK characters fall back to the subset.

The source is Debian's ``fonts-noto-cjk`` (``apt-get install fonts-noto-cjk``, or without installing it:
``apt-get download fonts-noto-cjk && dpkg-deb -x fonts-noto-cjk_*.deb root``), its face "Noto Sans CJK SC".
The characters are every CJK character of the notebook sources (the zh prose, comment twins and code twins: the
figures' strings, and a margin for labels still to come) and of docs/glossary.md, plus the Chinese figure words of
``llm_lab.explore.plotting``. The outlines become TrueType (quadratic) curves, which every matplotlib backend
(Agg, PDF, PS, SVG) embeds; the family is renamed (``FAMILY``), as the OFL asks of a modified font, so it is never
mistaken for a full Noto Sans CJK SC installed on the same machine. The output depends only on the source file,
the characters and fontTools' version (no timestamps). After a rebuild, put its sha256 in llm_lab/resources.py
and data/README.md.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import sys
from pathlib import Path

from llm_lab import resources
from tools.authoring import nbtool

ROOT = nbtool.ROOT
FONT_FILE, _ = resources.FIGURE_FONT
FAMILY = "Noto Sans SC llm-lab subset"
POSTSCRIPT = "NotoSansSC-llmlab-subset"
SOURCE_FACE = "Noto Sans CJK SC"


def _all_sources() -> list[Path]:
    return sorted(nbtool.SRC.glob("[0-9][0-9]_*.nbsrc"))


def _shown(literal: str) -> str:
    """The text a string literal draws: its value, each f-string field standing as '0'."""
    node = ast.parse(literal.strip(), mode="eval").body
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "0" for v in node.values)
    raise ValueError(f"not a string literal: {literal!r}")


def figure_strings(lang: str = "zh") -> list[tuple[str, str]]:
    """(where, text) of every string in ``lang``'s notebook code that holds CJK characters (figure titles, axis
    labels, legends: the notebooks print no Chinese from code) and of ``lang``'s figure words in llm_lab."""
    from llm_lab.explore import figure_words as plotting_words

    found = []
    for src in _all_sources():
        for cell in nbtool.parse(src, need_title=not src.name.endswith(".exercises.nbsrc"))["cells"]:
            if cell["type"] != "code":
                continue
            code = nbtool.localize_code(cell["source"], lang, cell["at"]).replace("{{LANG}}", f'"{lang}"')
            found += [(cell["at"], _shown(s)) for s in nbtool.code_and_strings(code)[1] if nbtool.CJK.search(s)]
    found += [
        (f"llm_lab.explore.figure_words.FIGURE_WORDS[{key!r}]", words[lang])
        for key, words in plotting_words.FIGURE_WORDS.items()
    ]
    return found


def cjk_chars(text: str) -> set[str]:
    return set(nbtool.CJK.findall(text))


def wanted_chars() -> set[str]:
    """The characters the subset holds: every CJK character of the sources and the glossary, and the figures'."""
    chars = cjk_chars((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"))
    for src in _all_sources():
        chars |= cjk_chars(src.read_text(encoding="utf-8"))
    for _, text in figure_strings():
        chars |= cjk_chars(text)
    return chars


def shipped_chars(path: Path | None = None) -> set[str]:
    """The characters the shipped font (or the font at ``path``) has a glyph for."""
    from fontTools.ttLib import TTFont

    path = path or resources.verified_path(*resources.FIGURE_FONT)
    with TTFont(str(path)) as font:
        return {chr(code) for code in font.getBestCmap()}


def _source_face(source: Path):
    from fontTools.ttLib import TTCollection, TTFont

    if source.suffix.lower() in (".ttc", ".otc"):
        faces = TTCollection(str(source)).fonts
    else:
        faces = [TTFont(str(source))]
    for face in faces:
        if face["name"].getDebugName(1) == SOURCE_FACE:
            return face
    names = [face["name"].getDebugName(1) for face in faces]
    raise ValueError(
        f"{source} has no face {SOURCE_FACE!r} (it has {names}); use Debian's fonts-noto-cjk "
        "NotoSansCJK-Regular.ttc or upstream's NotoSansCJKsc-Regular.otf"
    )


def _to_truetype(font) -> None:
    """Replace the font's cubic CFF outlines by quadratic TrueType ones, in place."""
    from fontTools.pens.cu2quPen import Cu2QuPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    from fontTools.ttLib import newTable

    order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    glyphs = {}
    for name in order:
        pen = TTGlyphPen(glyph_set)
        glyph_set[name].draw(Cu2QuPen(pen, max_err=1.0, reverse_direction=True))  # TrueType winds the other way
        glyphs[name] = pen.glyph()
    for tag in ("CFF ", "VORG"):
        if tag in font:
            del font[tag]
    font["loca"] = newTable("loca")
    font["glyf"] = glyf = newTable("glyf")
    glyf.glyphOrder, glyf.glyphs = order, glyphs
    glyf.compile(font)  # computes each glyph's bounds
    hmtx = font["hmtx"]
    for name in order:
        advance, _ = hmtx[name]
        hmtx[name] = (advance, getattr(glyphs[name], "xMin", 0))
    font["head"].glyphDataFormat = 0
    font["maxp"] = maxp = newTable("maxp")
    maxp.tableVersion = 0x00010000
    for field in (
        "maxTwilightPoints",
        "maxStorage",
        "maxFunctionDefs",
        "maxInstructionDefs",
        "maxStackElements",
        "maxSizeOfInstructions",
        "maxComponentElements",
    ):
        setattr(maxp, field, 0)
    maxp.maxZones = 1
    font["post"].formatType = 3.0  # no glyph names: matplotlib and FreeType find glyphs by code point
    font.sfntVersion = "\x00\x01\x00\x00"


def _rename(font) -> None:
    name = font["name"]
    version = name.getDebugName(5).split(";")[0]
    for record_id, text in ((1, FAMILY), (2, "Regular"), (3, f"{POSTSCRIPT} {version}"), (4, FAMILY), (6, POSTSCRIPT)):
        name.setName(text, record_id, 3, 1, 0x409)
        name.setName(text, record_id, 1, 0, 0)
    name.names = [n for n in name.names if n.nameID not in (16, 17)]  # no other typographic family


def build(source: Path, out: Path) -> str:
    """Write the subset of ``source`` holding ``wanted_chars()`` to ``out``; return its sha256."""
    from fontTools import subset

    font = _source_face(source)
    options = subset.Options()
    options.layout_features = []  # matplotlib lays out glyph by glyph: no GSUB/GPOS needed
    options.hinting = False
    options.notdef_outline = True
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(ch) for ch in wanted_chars()))
    subsetter.subset(font)
    _to_truetype(font)
    _rename(font)
    font.recalcTimestamp = False  # the same bytes on every rebuild
    font.save(str(out))
    return hashlib.sha256(out.read_bytes()).hexdigest()


def missing() -> list[str]:
    """'where: character' for every figure character the shipped font lacks."""
    have = shipped_chars()
    return [
        f"{where}: {ch!r} in {text!r}"
        for where, text in figure_strings()
        for ch in sorted(cjk_chars(text))
        if ch not in have
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.authoring.figure_font", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help=f"write data/{FONT_FILE} from Noto Sans CJK SC")
    b.add_argument("--source", type=Path, required=True, help="NotoSansCJK-Regular.ttc (Debian's fonts-noto-cjk)")
    b.add_argument("--out", type=Path, default=ROOT / "data" / FONT_FILE)
    sub.add_parser("check", help="list the figure characters the shipped font lacks (exit 1 if any)")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        digest = build(args.source, args.out)
        print(
            f"{args.out}: {args.out.stat().st_size:,} bytes, {len(shipped_chars(args.out))} characters, sha256 {digest}"
        )
        return 0
    lacking = missing()
    print("\n".join(lacking) if lacking else f"the shipped font covers all {len(figure_strings())} figure strings")
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main())
