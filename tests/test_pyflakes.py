"""pyflakes over the code no test runs whole: every page's code, read as the one script a reader's kernel runs top
to bottom, has no name used before anything defines it, no import the page never uses, no f-string without a field;
and the package, the benchmarks and the tests use no undefined name.

nbval runs the pages, but only at one scale and only the branches that scale takes; the benchmarks' full modes run
only when someone asks for their numbers. A name a page uses without importing -- page 13 once called IPython's
``display`` builtin, a NameError when the page runs as a plain script (``jupytext --to py``) -- or a benchmark's
branch that only ``cpu`` reaches is caught here in seconds. (The code files are held to undefined names only: their
deliberate unused imports carry ruff's ``noqa`` marks, which pyflakes does not read.)
"""
from __future__ import annotations

from pathlib import Path

import jupytext
import pytest
from pyflakes import messages
from pyflakes.api import check
from pyflakes.reporter import Reporter

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_MDS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))
CODE = sorted(p for d in ("shoulders", "benchmarks", "tests") for p in (ROOT / d).rglob("*.py"))
UNDEFINED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


class _Collect(Reporter):
    """A pyflakes reporter that keeps the messages instead of printing them."""

    def __init__(self) -> None:
        self.found: list = []  # pyflakes messages, or the text of an error

    def unexpectedError(self, filename, msg):  # noqa: N802 -- pyflakes' names
        self.found.append(f"{filename}: {msg}")

    def syntaxError(self, filename, msg, lineno, offset, text):  # noqa: N802
        self.found.append(f"{filename}:{lineno}: syntax error: {msg}")

    def flake(self, message):
        self.found.append(message)


def page_script(md: Path) -> tuple[str, list[int]]:
    """The page's code cells joined in order, IPython's ``%`` and ``!`` lines blanked (they are not Python; the
    line numbers stay), and the script line on which each code cell starts (1-based)."""
    nb = jupytext.read(md)
    cells = ["\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in c.source.splitlines())
             for c in nb.cells if c.cell_type == "code"]
    starts, line = [], 1
    for cell in cells:
        starts.append(line)
        line += cell.count("\n") + 2  # its lines, then the blank line between cells
    return "\n\n".join(cells) + "\n", starts


def flakes(md: Path) -> list[str]:
    """pyflakes' findings on ``md``'s code, each as "Cell k, line i: message" (k counts the code cells from 0, as
    nbval names them)."""
    source, starts = page_script(md)
    found = _Collect()
    check(source, md.name, found)
    out = []
    for m in found.found:
        if isinstance(m, str):
            out.append(m)
            continue
        k = max(i for i, s in enumerate(starts) if s <= m.lineno)
        out.append(f"Cell {k}, line {m.lineno - starts[k] + 1}: {m.message % m.message_args}")
    return out


@pytest.mark.parametrize("md", CHAPTER_MDS, ids=lambda p: p.name)
def test_page_code_passes_pyflakes(md):
    found = flakes(md)
    assert not found, f"{md.name}: pyflakes finds\n" + "\n".join(found)


def test_there_is_code_to_check():
    assert len(CODE) > 100 and ROOT / "shoulders" / "recipes" / "finetune.py" in CODE


@pytest.mark.parametrize("py", CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_uses_no_undefined_name(py):
    found = _Collect()
    check(py.read_text(), str(py.relative_to(ROOT)), found)
    bad = [m if isinstance(m, str) else f"line {m.lineno}: {m.message % m.message_args}" for m in found.found
           if isinstance(m, (str, *UNDEFINED))]
    assert not bad, f"{py.relative_to(ROOT)}: pyflakes finds\n" + "\n".join(bad)


def test_code_check_turns_red_on_an_undefined_name():
    found = _Collect()
    check("def f():\n    return g(1)\n", "f.py", found)
    assert [type(m) for m in found.found] == [messages.UndefinedName]


def test_pyflakes_turns_red_on_an_undefined_name_and_an_unused_import(tmp_path):
    page = tmp_path / "99_page.md"
    page.write_text("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n---\n\n"
                    "```{code-cell} ipython3\nimport math\n%matplotlib inline\n```\n\n"
                    "```{code-cell} ipython3\ndisplay(1)\n```\n")
    found = flakes(page)
    assert "Cell 1, line 1: undefined name 'display'" in found, found
    assert "Cell 0, line 1: 'math' imported but unused" in found, found
    assert not any("syntax" in f for f in found), found  # the magic line was blanked
