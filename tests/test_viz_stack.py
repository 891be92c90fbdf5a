"""shoulders.viz: figures outside pyplot, PNG image widgets, the kernel-less Stack view, the static-first View."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from shoulders import viz  # noqa: E402
from ipywidgets.widgets.widget_link import DirectionalLink, Link  # noqa: E402

from shoulders.viz.figure import png_size  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def small_figure(k: float = 1.0):
    fig, ax = viz.subplots(figsize=(2, 1.5))
    ax.plot([0, 1, 2], [0, k, 0])
    return fig


def test_subplots_is_outside_pyplot_and_shapes_axes():
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig, axes = viz.subplots(2, 3)
    assert isinstance(fig, viz.BookFigure) and axes.shape == (2, 3) and len(fig.axes) == 6
    assert plt.get_fignums() == before  # not registered with pyplot: no second display at cell end
    assert fig._repr_png_().startswith(PNG_MAGIC)


@pytest.mark.parametrize("colors", [None, 256, 16])
def test_figure_to_png_is_png_of_the_right_size_and_deterministic(colors):
    fig = small_figure()
    png = viz.figure_to_png(fig, dpi=50, colors=colors)
    assert png.startswith(PNG_MAGIC)
    assert png_size(png) == (100, 75)
    assert png == viz.figure_to_png(fig, dpi=50, colors=colors)


def test_palette_png_is_smaller():
    fig = small_figure()
    assert len(viz.figure_to_png(fig, dpi=100, colors=256)) < len(viz.figure_to_png(fig, dpi=100, colors=None))


def test_figure_to_image_widget_holds_the_png():
    fig = small_figure()
    img = viz.figure_to_image_widget(fig, dpi=50, width="300px")
    assert isinstance(img, widgets.Image) and img.format == "png"
    assert bytes(img.value) == viz.figure_to_png(fig, dpi=50)
    assert img.layout.width == "300px"
    raw = b"\x89PNG\r\n\x1a\n-not-checked-"
    assert bytes(viz.figure_to_image_widget(raw).value) == raw


@pytest.mark.parametrize("control, cls", [("dropdown", widgets.Dropdown), ("slider", widgets.SelectionSlider),
                                          ("toggle", widgets.ToggleButtons)])
def test_stack_view_has_one_child_per_label_and_jslinks_the_index(control, cls):
    labels = ["a", "b", "c"]
    figs = [small_figure(k) for k in (1, 2, 3)]
    view = viz.stack_view(labels, figs, description="pick", control=control, index=1)
    assert isinstance(view, widgets.VBox) and view.children[-2:] == (view.control, view.stack)
    assert isinstance(view.control, cls) and list(view.control.options) == labels
    assert view.control.description == "pick"
    assert isinstance(view.stack, widgets.Stack) and len(view.stack.children) == 3
    assert [bytes(c.value) for c in view.stack.children] == [viz.figure_to_png(f) for f in figs]
    assert view.control.index == 1 and view.stack.selected_index == 1
    # the link lives in the browser: a jslink (not a Python-side link) from the control's index to the Stack
    assert isinstance(view.link, Link) and not isinstance(view.link, DirectionalLink)
    assert view.link.source == (view.control, "index")
    assert view.link.target == (view.stack, "selected_index")
    view.select("c")
    assert view.control.index == 2


def test_stack_view_takes_png_bytes_and_widgets():
    png = viz.figure_to_png(small_figure())
    html = widgets.HTML("<b>x</b>")
    view = viz.stack_view(["png", "widget"], [png, html], header=[widgets.Label("hint")])
    assert bytes(view.stack.children[0].value) == png and view.stack.children[1] is html
    assert isinstance(view.children[0], widgets.Label)


def test_stack_view_rejects_mismatches():
    with pytest.raises(ValueError):
        viz.stack_view(["a", "b"], [small_figure()])
    with pytest.raises(ValueError):
        viz.stack_view([], [])
    with pytest.raises(ValueError):
        viz.stack_view(["a"], [small_figure()], control="wheel")
    with pytest.raises(TypeError):
        viz.stack_view(["a"], [np.zeros(3)])


def test_view_displays_the_static_figure_first_then_the_widget(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    fig = small_figure()
    widget = widgets.Label("live")
    viz.View(fig, widget)._ipython_display_()
    assert len(shown) == 2 and isinstance(shown[0], IPython.display.Image) and shown[1] is widget
    assert shown[0].data.startswith(PNG_MAGIC)
    shown.clear()
    viz.View(fig)._ipython_display_()
    assert len(shown) == 1  # no widget: the figure alone
