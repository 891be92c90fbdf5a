"""Equations typeset offline: _config.yml points Sphinx at the vendored MathJax 3, which is in the repo.

Reads files only (no book build): ``mathjax_path`` is not a URL and names a file under an ``html_static_path``
folder (Sphinx resolves a relative ``mathjax_path`` against ``_static/``), the vendored files are the pinned ones
(SHA256SUMS), small and licensed, and the fonts the component loads at runtime are there. The end-to-end check is
a screenshot of a built page with equations (book/_mathjax/README.md).
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
VENDOR_DIR = ROOT / "book" / "_mathjax"
VENDOR = VENDOR_DIR / "mathjax"
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_TOTAL_BYTES = 2.5 * 1024 * 1024


@pytest.fixture(scope="module")
def sphinx_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]


@pytest.fixture(scope="module")
def component(sphinx_config) -> Path:
    """The vendored file that ``mathjax_path`` names."""
    path = sphinx_config["mathjax_path"]
    hits = [ROOT / d / path for d in sphinx_config.get("html_static_path", []) if (ROOT / d / path).is_file()]
    assert hits, f"mathjax_path {path!r} is in no html_static_path folder"
    return hits[0]


def is_url(text: str) -> bool:
    return bool(re.match(r"^([a-z][a-z0-9+.-]*:)?//", text.strip(), re.I)) or "http" in text.lower()


def is_url_anywhere(value: object) -> bool:
    if isinstance(value, dict):
        return any(is_url_anywhere(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(is_url_anywhere(v) for v in value)
    return isinstance(value, str) and is_url(value)


def test_mathjax_path_is_local_and_exists(sphinx_config):
    path = sphinx_config.get("mathjax_path")
    assert path, "mathjax_path is not set: Sphinx would load MathJax from cdn.jsdelivr.net"
    assert not is_url(path), f"mathjax_path {path!r} is a URL; the book must typeset equations offline"
    assert not path.startswith("/") and not path.startswith("_static/"), \
        f"mathjax_path {path!r} must be relative to _static/ (Sphinx prefixes it)"
    static = sphinx_config.get("html_static_path", [])
    assert "book/_mathjax" in static, f"html_static_path {static} does not list book/_mathjax"
    hits = [ROOT / d / path for d in static if (ROOT / d / path).is_file()]
    assert hits, f"mathjax_path {path!r} is in no html_static_path folder {static}"


def test_no_mathjax_options_point_at_the_network(sphinx_config):
    for key in ("mathjax_options", "mathjax3_config", "mathjax2_config", "mathjax_config"):
        assert not is_url_anywhere(sphinx_config.get(key)), f"{key} refers to a URL"



def test_vendored_files_are_the_pinned_ones_and_small():
    listed = {}
    for line in filter(None, (VENDOR / "SHA256SUMS").read_text().split("\n")):
        digest, name = line.split(maxsplit=1)
        listed[name] = digest
    on_disk = {p.relative_to(VENDOR).as_posix() for p in VENDOR.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert set(listed) == on_disk, f"SHA256SUMS and the folder differ: re-run scripts/vendor_mathjax.sh " \
                                   f"(unlisted {sorted(on_disk - set(listed))}, " \
                                   f"missing {sorted(set(listed) - on_disk)})"
    for name, digest in listed.items():
        data = (VENDOR / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{name} differs from SHA256SUMS: re-run the vendor script"
        assert len(data) <= MAX_FILE_BYTES, f"{name} is {len(data)} bytes"
    total = sum(p.stat().st_size for p in VENDOR_DIR.rglob("*") if p.is_file())
    assert total <= MAX_TOTAL_BYTES, f"book/_mathjax is {total} bytes"


def test_component_is_mathjax3_with_tex_input(component):
    text = component.read_text(encoding="utf-8", errors="replace")
    assert re.search(r'VERSION\s*=\s*"3\.', text), "not a MathJax 3 component"
    m = re.search(r"^mathjax (3\.\d+\.\d+) ", (VENDOR / "VERSIONS").read_text(), re.M)
    assert m, "VERSIONS does not name the mathjax 3 release"
    assert m.group(1) in text, f"the component is not mathjax {m.group(1)}"
    assert "input/tex" in text and "[tex]/ams" in text, "the component lacks TeX input with amsmath"


def test_every_runtime_file_the_component_loads_is_vendored(component):
    """CommonHTML output loads its fonts from output/chtml/fonts/woff-v2/ next to the script; the tex-*-full
    components bundle every TeX extension, anything else would autoload input/tex/extensions/*.js."""
    text = component.read_text(encoding="utf-8", errors="replace")
    if "output/chtml" in text:
        fonts = set(re.findall(r"%%URL%%/([\w.-]+\.woff)", text))
        assert fonts, "no font names found in the CommonHTML component"
        folder = component.parent / "output" / "chtml" / "fonts" / "woff-v2"
        missing = sorted(f for f in fonts if not (folder / f).is_file())
        assert not missing, missing
    if "[tex]/autoload" in text and "[tex]/all-packages" not in text:
        pytest.fail(f"{component.name} autoloads TeX extensions at runtime: vendor a tex-*-full component")


def test_licence_readme_and_script_are_there():
    licence = (VENDOR / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0" in licence
    assert (VENDOR_DIR / "README.md").is_file()
    assert (ROOT / "scripts" / "vendor_mathjax.sh").is_file()
