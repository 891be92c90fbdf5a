"""Widgets render offline: _config.yml points myst-nb at the vendored ipywidgets JavaScript, which is in the repo.

Reads files only (no book build): the configured widget scripts exist under an ``html_static_path`` folder and
are not URLs, the vendored files are the pinned ones (SHA256SUMS), small, licensed, and fit ipywidgets 8.
``scripts/screenshot_widget.py --check`` is the end-to-end check in a browser.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "book" / "_widgets" / "jupyter-widgets"
MAX_BYTES = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def sphinx_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]


def is_url(text: str) -> bool:
    return bool(re.match(r"^([a-z][a-z0-9+.-]*:)?//", text.strip(), re.I)) or "http" in text.lower()


def test_myst_nb_still_reads_nb_ipywidgets_js():
    from myst_nb.core.config import NbParserConfig

    assert "ipywidgets_js" in {f.name for f in dataclasses.fields(NbParserConfig)}


def test_widget_js_is_configured_and_local(sphinx_config):
    js = sphinx_config.get("nb_ipywidgets_js")
    assert js, "nb_ipywidgets_js is not set: myst-nb would load require.js and the widget renderer from CDNs"
    static = sphinx_config.get("html_static_path", [])
    assert static, "html_static_path must name the vendored widget folder"
    for path, attrs in js.items():
        assert not is_url(path), f"widget JS {path!r} is a URL; the book must render widgets offline"
        for key, value in (attrs or {}).items():
            assert not is_url(str(value)), f"{path}: attribute {key}={value!r} points at the network"
        hits = [ROOT / d / path for d in static if (ROOT / d / path).is_file()]
        assert hits, f"{path!r} is in no html_static_path folder {static}"


def test_static_folders_exist_and_are_not_named_static(sphinx_config):
    for d in sphinx_config["html_static_path"]:
        assert not is_url(d) and (ROOT / d).is_dir(), d
        # Jupyter Book adds every .js under a `_static/` folder to every page
        assert Path(d).name != "_static", d


def test_vendored_files_are_the_pinned_ones_and_small():
    sums = (VENDOR / "SHA256SUMS").read_text().split("\n")
    listed = {}
    for line in filter(None, sums):
        digest, name = line.split()
        listed[name] = digest
    assert "embed.js" in listed and any(n.endswith(".woff2") for n in listed)
    for name, digest in listed.items():
        data = (VENDOR / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{name} differs from SHA256SUMS: re-run the vendor script"
        assert len(data) <= MAX_BYTES, f"{name} is {len(data)} bytes"


def test_licences_and_versions_are_next_to_the_code():
    for name in ("LICENSE", "LICENSE.fontawesome.txt", "embed.js.LICENSE.txt", "VERSIONS"):
        assert (VENDOR / name).is_file(), name
    assert "BSD" in (VENDOR / "LICENSE").read_text() or "Redistribution" in (VENDOR / "LICENSE").read_text()
    assert (ROOT / "book" / "_widgets" / "README.md").is_file()
    assert (ROOT / "scripts" / "vendor_widgets_js.sh").is_file()


def test_vendored_renderer_fits_ipywidgets():
    from ipywidgets._version import __html_manager_version__  # e.g. "^1.0.1"

    m = re.search(r"@jupyter-widgets/html-manager (\d+)\.", (VENDOR / "VERSIONS").read_text())
    assert m, "VERSIONS does not name the html-manager version"
    assert m.group(1) == re.search(r"\d+", __html_manager_version__).group(), (m.group(1), __html_manager_version__)
    head = (VENDOR / "embed.js").read_text(encoding="utf-8", errors="replace")[:300]
    assert "define(" not in head, "embed.js must be the standalone bundle, not the AMD one (that needs require.js)"


def test_every_font_the_bundle_asks_for_first_is_vendored():
    text = (VENDOR / "embed.js").read_text(encoding="utf-8", errors="replace")
    woff2 = set(re.findall(r'"([0-9a-f]{20}\.woff2)"', text))
    assert woff2, "no hashed .woff2 names found in embed.js"
    missing = [f for f in woff2 if not (VENDOR / f).is_file()]
    assert not missing, missing
