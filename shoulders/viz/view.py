"""Static first: a widget view always comes with a matplotlib figure of its default state.

A rendered book page has no kernel and nbval compares outputs, so the picture that matters must not depend on
JavaScript. :class:`View` pairs the two: displaying it shows the figure (a PNG), then the widget (live in a
kernel; in the book, whatever its embedded state can do without one, e.g. a :func:`~shoulders.viz.stack_view`).
"""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from .figure import figure_to_png

__all__ = ["View"]


class View:
    """A static figure plus an optional widget; ``display(view)`` shows both, the figure first.

    Attributes:
        figure: the static figure of the default view (always displayed).
        widget: the interactive part, or ``None``.
        data: anything the maker wants to expose for tests and reuse (curves, schedules, ...).
    """

    def __init__(self, figure: Figure, widget: Any = None, **data: Any):
        self.figure = figure
        self.widget = widget
        self.data = data

    def _ipython_display_(self) -> None:
        from IPython.display import Image, display

        display(Image(data=figure_to_png(self.figure, dpi=100), format="png"))
        if self.widget is not None:
            display(self.widget)

    def __repr__(self) -> str:
        n = len(self.figure.axes)
        w = type(self.widget).__name__ if self.widget is not None else None
        return f"View(figure with {n} axes, widget={w})"
