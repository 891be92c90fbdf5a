"""The book's structure: every chapter is a synced jupytext pair, in the table of contents, executed by nbval,
and the harness really turns red on a failing assertion."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTER_MDS = sorted(p for p in BOOK.glob("[0-9][0-9]_*.md"))
NOTEBOOKS = sorted(p for p in BOOK.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


def test_there_are_chapters():
    assert CHAPTER_MDS, "book/ has no chapter"


@pytest.mark.parametrize("md", CHAPTER_MDS, ids=lambda p: p.name)
def test_chapter_pair_in_sync(md):
    ipynb = md.with_suffix(".ipynb")
    assert ipynb.exists(), f"{md.name} has no paired notebook: run `jupytext --sync {md}`"
    a, b = jupytext.read(md), jupytext.read(ipynb)
    cells_a = [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in a.cells]
    cells_b = [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in b.cells]
    assert cells_a == cells_b, f"{md.name} and {ipynb.name} differ: run `jupytext --sync {md}`"


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebooks_carry_no_outputs(ipynb):
    nb = nbformat.read(ipynb, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{ipynb.name}: cells {dirty} carry outputs; clear them (jupytext --sync from the .md does)"


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_has_a_markdown_twin(ipynb):
    assert ipynb.with_suffix(".md").exists(), f"{ipynb.name}: the reviewed source is the .md; pair it"


def test_every_chapter_is_in_the_toc_and_every_toc_file_exists():
    files = toc_files()
    for f in files:
        assert any((ROOT / f).with_suffix(s).exists() for s in (".md", ".ipynb")), f"_toc.yml names missing {f}"
    for md in CHAPTER_MDS:
        assert str(md.relative_to(ROOT).with_suffix("")) in files, f"{md.name} is not in _toc.yml"


@pytest.mark.parametrize("md", CHAPTER_MDS, ids=lambda p: p.name)
def test_chapter_starts_with_the_setup_cell(md):
    nb = jupytext.read(md)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert "google.colab" in first.source and "pip" in first.source, "first code cell must install shoulders on Colab"
    assert "sh.setup(" in first.source, "first code cell must print the scale and device"


def test_nbval_collects_every_notebook():
    """No chapter can be left out: nbval finds every notebook under book/ by itself."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--nbval-lax", str(BOOK)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    collected = {line.split("::")[0] for line in out.stdout.splitlines() if "::" in line}
    for nb in NOTEBOOKS:
        assert any(c.endswith(nb.name) for c in collected), f"nbval did not collect {nb.name}:\n{out.stdout[-2000:]}"


def _notebook(cells: list[str]) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(textwrap.dedent(c)) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return json.loads(nbformat.writes(nb))


@pytest.mark.parametrize("claim, passes", [("assert facts['scale'] == 'smoke'", True),
                                           ("assert facts['scale'] == 'a-scale-that-does-not-exist'", False)])
def test_nbval_harness_turns_red_on_a_failing_assert(tmp_path, claim, passes):
    path = tmp_path / "harness.ipynb"
    path.write_text(json.dumps(_notebook(["import shoulders as sh\nfacts = sh.setup(quiet=True)", claim])))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                          "--rootdir", str(tmp_path), str(path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "SHOULDERS_SCALE": "smoke"})
    assert (out.returncode == 0) == passes, out.stdout[-3000:]
    if not passes:
        assert "AssertionError" in out.stdout


CHAPTER_REF = re.compile(r"\b[Cc]hapters? (\d+(?:\s*(?:–|-|,|and)\s*\d+)*)")


def chapter_refs(text: str) -> list[int]:
    """Every chapter number a text names ("chapter 9", "chapters 13 and 15", "Chapters 2–6")."""
    found = []
    for m in CHAPTER_REF.finditer(text):
        numbers = [int(n) for n in re.findall(r"\d+", m.group(1))]
        if re.search(r"[–-]", m.group(1)) and len(numbers) == 2:
            numbers = list(range(numbers[0], numbers[1] + 1))
        found += numbers
    return found


def test_chapter_refs_are_read():
    assert chapter_refs("see chapters 13 and 15, planned; Chapters 2–4 and chapter 9") == [13, 15, 2, 3, 4, 9]


@pytest.mark.parametrize("md", CHAPTER_MDS + [BOOK / "intro.md"], ids=lambda p: p.name)
def test_pages_cite_only_written_chapters(md):
    """A chapter not yet written has no page to link to and may still be renumbered: name it ("a planned
    chapter"), never its number."""
    written = {int(p.name[:2]) for p in BOOK.glob("[0-9][0-9]_*.md")}
    text = md.read_text(encoding="utf-8").replace("\n", " ")
    bad = sorted({n for n in chapter_refs(text) if n not in written})
    assert not bad, f"{md.name} cites chapters not yet written: {bad} (say 'a planned chapter' instead)"
