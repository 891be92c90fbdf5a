"""Matplotlib figures that live outside pyplot, and their PNG bytes for image widgets.

Figures are made with :class:`matplotlib.figure.Figure` directly, never through ``pyplot``: pyplot keeps every
figure alive in a global registry and the inline backend shows each one again at the end of the cell, so a
figure that is also returned would appear twice. A :class:`BookFigure` displays itself as a PNG in IPython
(``_repr_png_``) exactly when it is a cell's value or is passed to ``display``.
"""
from __future__ import annotations

import io
from typing import Any

import numpy as np
from matplotlib.figure import Figure

__all__ = ["BookFigure", "figure_to_png", "figure_to_image_widget", "subplots", "DPI"]

DPI = 80
"""Resolution of the PNGs in widgets and static outputs: small files, sharp enough at page width."""


class BookFigure(Figure):
    """A :class:`~matplotlib.figure.Figure` that IPython shows as a PNG without pyplot."""

    def _repr_png_(self) -> bytes:
        return figure_to_png(self, dpi=100)


def subplots(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] | None = None,
             squeeze: bool = True, **subplot_kw: Any) -> tuple[BookFigure, Any]:
    """Like ``plt.subplots`` but outside pyplot: ``(fig, axes)``, with a constrained layout.

    ``axes`` is one Axes when ``squeeze`` and ``nrows == ncols == 1``, else an ``(nrows, ncols)`` array
    (squeezed like pyplot's when ``squeeze``).
    """
    if figsize is None:
        figsize = (4.0 * ncols, 2.8 * nrows)
    fig = BookFigure(figsize=figsize, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=squeeze, subplot_kw=subplot_kw or None)
    return fig, axes


def figure_to_png(fig: Figure, dpi: int = DPI, colors: int | None = 256) -> bytes:
    """The figure as PNG bytes (no software tag, so equal figures give equal bytes).

    ``colors``: an opaque figure is stored with a palette of at most this many colours (line plots and
    256-entry colormaps look the same, the file is about 3× smaller, which keeps widget state small);
    ``None`` keeps full RGBA.
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    if colors is None:
        return buf.getvalue()
    from PIL import Image  # a matplotlib dependency

    buf.seek(0)
    with Image.open(buf) as im:
        if im.mode == "RGBA" and im.getchannel("A").getextrema() != (255, 255):
            return buf.getvalue()  # transparent parts: a palette would lose them
        out = io.BytesIO()
        im.convert("RGB").quantize(colors, method=Image.Quantize.FASTOCTREE).save(out, format="png", optimize=True)
    return out.getvalue()


def figure_to_image_widget(fig: Figure | bytes, dpi: int = DPI, colors: int | None = 256, **layout: Any):
    """An :class:`ipywidgets.Image` holding the figure's PNG (or the given PNG bytes; see :func:`figure_to_png`).

    ``layout`` keywords (``width="100%"``, ``max_width="640px"``, ...) go to the widget's Layout. The image is
    stored in the widget state, so it shows in the rendered book without a kernel.
    """
    import ipywidgets as widgets

    png = fig if isinstance(fig, (bytes, bytearray)) else figure_to_png(fig, dpi=dpi, colors=colors)
    return widgets.Image(value=bytes(png), format="png", layout=widgets.Layout(**layout))


def png_size(png: bytes) -> tuple[int, int]:
    """``(width, height)`` in pixels of PNG bytes (read from the IHDR chunk)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not PNG data")
    w, h = np.frombuffer(png[16:24], dtype=">u4")
    return int(w), int(h)
