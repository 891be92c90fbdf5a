#!/usr/bin/env python3
"""Screenshot a page of the built book in headless Chromium, and check that its widgets rendered offline.

The book embeds ipywidgets state in each page and renders it with the vendored ``book/_widgets`` JavaScript, so
a page must show its widgets with no network. This script serves the built HTML on 127.0.0.1 (a free port),
opens one page in headless Chromium with every other host unresolvable, and

* writes a PNG screenshot of it (look at it: the widget must be visible), and
* with ``--check``, reads the page's DOM after its scripts ran (``--dump-dom``) and counts the widget views the
  page embeds (``<script type="application/vnd.jupyter.widget-view+json">``), the ones that rendered (a
  ``div.widget-subarea`` holding ``lm-Widget`` / ``jupyter-widgets`` / ``widget-*`` elements) and the cell
  errors the page shows (a traceback output, left by a cell that failed in a build without ``-W``).

Exit status: 0 when the page is fine -- every widget view rendered, or the page simply has none (it says so);
2 when a widget view did not render or the page shows a cell's traceback; 1 when the script itself could not
run (no page, no Chromium, Chromium failed).

Usage (from the repository root, after ``jupyter-book build .``)::

    python scripts/screenshot_widget.py book/12_transformer.html          # -> _build/screenshots/12_transformer.png
    python scripts/screenshot_widget.py book/12_transformer.html --check -o shot.png --height 30000
    python scripts/screenshot_widget.py book/01_ngram.html --html-dir /tmp/wbook/_build/html --height 2400

Needs Chromium (Debian: ``apt-get install -y chromium``; or set ``CHROMIUM=/path/to/chrome``). Runs as root
too (``--no-sandbox``). Only the Python standard library is used.
"""
from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
WIDGET_CLASSES = ("lm-Widget", "jupyter-widgets")
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def find_chromium(explicit: str | None) -> str:
    for name in (explicit, os.environ.get("CHROMIUM"), *CHROMIUM_NAMES):
        if name and (path := shutil.which(name)):
            return path
    sys.exit("no Chromium found: `apt-get install -y chromium`, or pass --chromium / set CHROMIUM")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def serve(directory: Path) -> http.server.ThreadingHTTPServer:
    """An HTTP server for ``directory`` on 127.0.0.1 and a free port, running in a daemon thread."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def chromium(binary: str, url: str, *args: str, wait_ms: int, size: tuple[int, int], timeout: float) -> str:
    """Run headless Chromium on ``url`` with extra ``args``; returns its stdout."""
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}",
            # offline proof: every host but the local server fails to resolve
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={wait_ms}", *args, url,
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"chromium failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


class WidgetCount(html.parser.HTMLParser):
    """Counts embedded widget views, the ``div.widget-subarea`` that hold rendered widget elements, and the cell
    outputs that are tracebacks (myst-nb renders an error output as ``div.output.traceback``)."""

    def __init__(self) -> None:
        super().__init__()
        self.views = 0
        self.tracebacks = 0
        self.subareas: list[int] = []  # rendered widget elements inside each subarea
        self._depth = 0
        self._inside: int | None = None  # depth of the open subarea

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "script" and a.get("type") == VIEW_MIME:
            self.views += 1
        if tag == "div" and "output" in classes and "traceback" in classes:
            self.tracebacks += 1
        if self._inside is not None and (any(c in WIDGET_CLASSES for c in classes)
                                         or any(c.startswith("widget-") for c in classes)):
            self.subareas[-1] += 1
        if tag in VOID:
            return
        self._depth += 1
        if tag == "div" and "widget-subarea" in classes and self._inside is None:
            self._inside = self._depth
            self.subareas.append(0)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if self._inside is not None and self._depth == self._inside:
            self._inside = None
        self._depth -= 1


def check_dom(dom: str) -> int:
    """0 if the page is fine (its widgets rendered, or it has none), 2 if a widget or a cell failed."""
    count = WidgetCount()
    count.feed(dom)
    rendered = sum(1 for n in count.subareas if n > 0)
    status = 0
    if count.tracebacks:
        print(f"FAIL: the page shows {count.tracebacks} cell error(s) (a traceback output): a cell failed while the "
              "book was built -- build with -W so that the build fails instead")
        status = 2
    if count.views == 0:
        print("OK: the page has no widget view (nothing to render)" if not status else "the page has no widget view")
        return status
    print(f"widget views embedded: {count.views}; rendered: {rendered} "
          f"(widget elements per view: {count.subareas})")
    if rendered < count.views:
        print("FAIL: some widget views did not render (is book/_widgets wired in _config.yml?)")
        return 2
    if not status:
        print("OK: every widget view rendered")
    return status


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("page", help="page path inside the built HTML, e.g. book/11_ulmfit.html")
    p.add_argument("-o", "--output", type=Path, help="PNG to write (default _build/screenshots/<page>.png)")
    p.add_argument("--html-dir", type=Path, default=Path("_build/html"), help="built book (default _build/html)")
    p.add_argument("--check", action="store_true", help="also check that every widget view rendered")
    p.add_argument("--width", type=int, default=1200)
    p.add_argument("--height", type=int, default=1800)
    p.add_argument("--wait-ms", type=int, default=8000, help="virtual time the page's scripts get (default 8000)")
    p.add_argument("--timeout", type=float, default=120, help="seconds before Chromium is given up on")
    p.add_argument("--chromium", help="Chromium binary (default: $CHROMIUM or the first on PATH)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)

    html_dir = args.html_dir.resolve()
    page = args.page.lstrip("/")
    if not (html_dir / page).is_file():
        sys.exit(f"no page {page!r} in {html_dir} (build the book first: jupyter-book build .)")
    out = args.output or Path("_build/screenshots") / (Path(page).stem + ".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    binary = find_chromium(args.chromium)

    server = serve(html_dir)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
        size = (args.width, args.height)
        chromium(binary, url, f"--screenshot={out.resolve()}", wait_ms=args.wait_ms, size=size, timeout=args.timeout)
        if not out.is_file() or out.stat().st_size == 0:
            sys.exit(f"chromium wrote no screenshot to {out}")
        print(f"screenshot: {out} ({out.stat().st_size} bytes) of {url}")
        status = 0
        if args.check:
            dom = chromium(binary, url, "--dump-dom", wait_ms=args.wait_ms, size=size, timeout=args.timeout)
            status = check_dom(dom)
    finally:
        server.shutdown()
        server.server_close()
    return status


if __name__ == "__main__":
    sys.exit(main())
