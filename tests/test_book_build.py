"""The rendered book's structure: Jupyter Book builds every chapter page with no warning (-W -n).

Notebook execution is switched off here (the nbval run executes every notebook already, and the README's book
command builds with execution on); this test is about the table of contents, cross-references, MyST syntax and
the static files the pages need.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_book_builds_without_warnings_and_has_every_chapter_page(tmp_path):
    jb = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    assert jb, "jupyter-book is not installed next to this Python (install the [test] extra)"
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
    # Colab launches the same-name notebook, so every chapter page needs its .ipynb next to the .md
    for page in pages[1:]:
        assert (ROOT / f"{page}.ipynb").exists()
