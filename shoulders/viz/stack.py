"""A Stack of precomputed views switched by a control, with no kernel needed.

``widgets.Stack`` shows one child at a time; its ``selected_index`` is ``jslink``-ed to the ``index`` of a
Dropdown (or SelectionSlider / ToggleButtons), so the link runs in the browser: the rendered book switches views
from the embedded widget state alone. Live code can still swap a child's image (e.g. on a slider change).
Used by the learning-rate, attention-head and ELMo layer-weight widgets.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets as widgets
from matplotlib.figure import Figure

from .figure import DPI, figure_to_image_widget

__all__ = ["StackView", "stack_view"]

_CONTROLS = {
    "dropdown": widgets.Dropdown,
    "slider": widgets.SelectionSlider,
    "toggle": widgets.ToggleButtons,
}


class StackView(widgets.VBox):
    """``VBox([control, stack])`` with the pieces exposed: ``.control``, ``.stack``, ``.link``, ``.labels``.

    Displays as an ordinary VBox (same widget model), so it embeds like any other widget.
    """

    def __init__(self, control: widgets.Widget, stack: widgets.Stack, link: widgets.Link, labels: Sequence[str],
                 header: Sequence[widgets.Widget] = (), **kwargs: Any):
        super().__init__(children=[*header, control, stack], **kwargs)
        self.control = control
        self.stack = stack
        self.link = link
        self.labels = list(labels)

    def select(self, label_or_index: str | int) -> None:
        """Show one view (by label or index), as a reader picking it in the control would."""
        i = self.labels.index(label_or_index) if isinstance(label_or_index, str) else int(label_or_index)
        self.control.index = i


def _as_widget(item: Any, dpi: int) -> widgets.Widget:
    if isinstance(item, widgets.Widget):
        return item
    if isinstance(item, (Figure, bytes, bytearray)):
        return figure_to_image_widget(item, dpi=dpi)
    raise TypeError(f"stack_view items must be Figures, PNG bytes or widgets, not {type(item).__name__}")


def stack_view(labels: Sequence[str], figures_or_images: Sequence[Any], description: str = "",
               control: str = "dropdown", index: int = 0, dpi: int = DPI,
               header: Sequence[widgets.Widget] = ()) -> StackView:
    """A control plus a Stack with one child per label, switching in the browser (no kernel).

    Args:
        labels: one name per view, shown in the control.
        figures_or_images: one item per label: a matplotlib Figure (rendered to PNG), PNG bytes, or any widget
            (used as is, e.g. a VBox of sliders and an image).
        description: the control's label.
        control: ``"dropdown"`` (default), ``"slider"`` (SelectionSlider) or ``"toggle"`` (ToggleButtons).
        index: the view shown first.
        header: widgets placed above the control (a title, a hint).

    Returns:
        a :class:`StackView`; ``jslink((control, "index"), (stack, "selected_index"))`` ties the two.
    """
    labels = [str(label) for label in labels]
    items = list(figures_or_images)
    if len(labels) != len(items):
        raise ValueError(f"{len(labels)} labels but {len(items)} figures/images")
    if not labels:
        raise ValueError("stack_view needs at least one view")
    if control not in _CONTROLS:
        raise ValueError(f"control must be one of {sorted(_CONTROLS)}, not {control!r}")
    if not 0 <= index < len(labels):
        raise IndexError(f"index {index} out of range for {len(labels)} views")
    children = [_as_widget(item, dpi) for item in items]
    stack = widgets.Stack(children=children, selected_index=index)
    kwargs: dict[str, Any] = {"options": labels, "index": index, "description": description}
    if control == "dropdown":
        kwargs["layout"] = widgets.Layout(width="max-content")
        kwargs["style"] = {"description_width": "initial"}
    if control == "slider":
        kwargs["continuous_update"] = True
        kwargs["style"] = {"description_width": "initial"}
    ctrl = _CONTROLS[control](**kwargs)
    link = widgets.jslink((ctrl, "index"), (stack, "selected_index"))
    return StackView(ctrl, stack, link, labels, header=header)
