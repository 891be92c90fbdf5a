"""The rendered book's structure: Jupyter Book builds every chapter page with no warning (-W -n).

Notebook execution is switched off here (the nbval run executes every notebook already, and the README's book
command builds with execution on); this test is about the table of contents, cross-references, MyST syntax and
the static files the pages need, and that every page has one search box (not the two of two theme versions).

Also: a book whose cell fails does not build at all with the book's configuration (even without ``-W``), so no
traceback and blank widget are ever published; and ``scripts/screenshot_widget.py --check`` tells a page without
widgets (fine) from one whose widgets or cells failed.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def jupyter_book() -> str:
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    assert jb, "jupyter-book is not installed next to this Python (install the [test] extra)"
    return jb


def test_book_builds_without_warnings_and_has_every_chapter_page(tmp_path):
    jb = jupyter_book()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    cfg_file = tmp_path / "_config.yml"
    cfg_file.write_text(yaml.safe_dump(config))
    out = subprocess.run([jb, "build", "-W", "-n", "--keep-going", "--path-output", str(tmp_path / "out"),
                          "--config", str(cfg_file), str(ROOT)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    html = tmp_path / "out" / "_build" / "html"
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]] + [c["file"] for p in toc.get("parts", []) for c in p.get("chapters", [])]
    for page in pages:
        assert (html / f"{page}.html").exists(), f"no page for {page}"
        search_boxes = re.findall(r'class="[^"]*\bsearch-button-field\b', (html / f"{page}.html").read_text())
        assert len(search_boxes) == 1, f"{page}: {len(search_boxes)} search boxes (the theme's header bar is back?)"
    # Colab launches the same-name notebook, so every chapter page needs its .ipynb next to the .md
    for page in pages[1:]:
        assert (ROOT / f"{page}.ipynb").exists()


def test_a_failing_cell_fails_the_build_even_without_W(tmp_path):
    """With the book's execution settings, a page whose cell raises stops the build (no -W needed)."""
    book = tmp_path / "book"
    (book / "book").mkdir(parents=True)
    (book / "book" / "intro.md").write_text("# A book\n")
    (book / "book" / "bad.md").write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n"
        "# A page with a failing cell\n\n```{code-cell} ipython3\nraise RuntimeError('this cell fails')\n```\n")
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n- file: book/bad\n")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    keep = {"execute", "sphinx", "parse", "title"}
    config = {k: v for k, v in config.items() if k in keep}
    for key in ("html_static_path", "nb_ipywidgets_js", "mathjax_path"):  # the repository's folders, not needed
        config["sphinx"]["config"].pop(key, None)
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    out = subprocess.run([jupyter_book(), "build", str(book)], capture_output=True, text=True, timeout=300,
                         cwd=book)
    log = out.stdout + out.stderr
    assert out.returncode != 0, f"a failing cell still built the book:\n{log[-3000:]}"
    assert "bad.md" in log
    assert not (book / "_build" / "html" / "book" / "bad.html").exists()


def screenshot_script():
    spec = importlib.util.spec_from_file_location("screenshot_widget", ROOT / "scripts" / "screenshot_widget.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VIEW = '<script type="application/vnd.jupyter.widget-view+json">{"model_id": "m"}</script>'
RENDERED = '<div class="widget-subarea"><div class="lm-Widget jupyter-widgets widget-dropdown"></div></div>'
BLANK = '<div class="widget-subarea"></div>'
TRACEBACK = '<div class="cell_output docutils container"><div class="output traceback highlight-ipythontb">' \
            '<pre>ZeroDivisionError</pre></div></div>'


@pytest.mark.parametrize("dom,status", [
    ("<html><body><p>prose only</p></body></html>", 0),  # a page with no widget is fine
    (VIEW + RENDERED, 0),
    (VIEW + VIEW + RENDERED + BLANK, 2),  # one widget did not render
    (VIEW + BLANK, 2),
    (TRACEBACK, 2),  # a failed cell, no widget
    (VIEW + BLANK + TRACEBACK, 2),
])
def test_screenshot_check_tells_a_page_without_widgets_from_a_broken_one(dom, status, capsys):
    assert screenshot_script().check_dom(dom) == status
    said = capsys.readouterr().out
    assert ("OK" in said) == (status == 0) and ("FAIL" in said) == (status != 0)
