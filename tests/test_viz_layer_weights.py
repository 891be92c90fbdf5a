"""shoulders.viz.layer_weights: ELMo's layer weights per task -- read from a History, the static bars and
trajectories, the kernel-less task menu and step slider, the live slider, and the embedded widget state.

The histories are real :class:`shoulders.train.History` objects into which a few steps of a mix are logged the
way a task model does (``mix_w0`` … ``mix_gamma``), moving from uniform (s = 0) to each task's final weights.
"""
from __future__ import annotations

import base64

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from ipywidgets.embed import embed_data  # noqa: E402
from ipywidgets.widgets.widget_link import DirectionalLink, Link  # noqa: E402

from shoulders import viz  # noqa: E402
from shoulders.train.history import History  # noqa: E402
from shoulders.viz.figure import png_size  # noqa: E402

from shoulders.viz import layer_weights as lm  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FINAL = {"NER": [0.2, 0.5, 0.3], "SST": [0.1, 0.3, 0.6]}
GAMMA = {"NER": 1.6, "SST": 0.7}
K = 40


def trajectory(final, steps=K, gamma_end=1.0):
    """``(weights (steps, L), gammas (steps,))``: softmax of s moving linearly from 0 (uniform) to log(final)."""
    s = np.linspace(0.0, 1.0, steps)[:, None] * np.log(np.asarray(final, dtype=np.float64))[None, :]
    w = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    return w, np.linspace(1.0, gamma_end, steps)


def make_history(final, steps=K, gamma_end=1.0, prefixes=("mix",), first_step=1):
    h = History()
    w, g = trajectory(final, steps, gamma_end)
    for k in range(steps):
        logged = {"loss": 1.0 / (k + 1)}
        for p in prefixes:
            logged |= {f"{p}_w{j}": w[k, j] for j in range(w.shape[1])} | {f"{p}_gamma": g[k]}
        h.log(first_step + k, **logged)
    return h


def bar_axes(fig):
    return [ax for ax in fig.axes if ax.patches]


def line_axes(fig):
    return [ax for ax in fig.axes if not ax.patches]


def dashed_levels(ax):
    return [float(line.get_ydata()[0]) for line in ax.lines if line.get_linestyle() == "--"]


@pytest.fixture(scope="module")
def histories():
    return {task: make_history(FINAL[task], gamma_end=GAMMA[task]) for task in FINAL}


@pytest.fixture(scope="module")
def view(histories):
    return viz.layer_mix(histories, title="ELMo's mixes")


# -- reading the mix ------------------------------------------------------------------------------------------

def test_mix_trace_reads_the_weights_and_gamma_a_history_logged(histories):
    tr = viz.mix_trace(histories["NER"])
    w, g = trajectory(FINAL["NER"], gamma_end=GAMMA["NER"])
    np.testing.assert_array_equal(tr["steps"], np.arange(1, K + 1))
    np.testing.assert_allclose(tr["weights"], w)
    np.testing.assert_allclose(tr["gamma"], g)
    assert tr["weights"].shape == (K, 3)
    np.testing.assert_allclose(tr["weights"][0], [1 / 3] * 3)  # starts uniform
    np.testing.assert_allclose(tr["weights"][-1], FINAL["NER"])  # settles on the task's mix


def test_a_prefix_picks_one_of_two_mixes():
    h = History()
    for step, (a, b) in enumerate([((0.2, 0.8), (0.5, 0.5)), ((0.1, 0.9), (0.7, 0.3))], start=1):
        h.log(step, mix_in_w0=a[0], mix_in_w1=a[1], mix_in_gamma=2.0,
              mix_out_w0=b[0], mix_out_w1=b[1], mix_out_gamma=0.5)
    np.testing.assert_allclose(viz.mix_trace(h, prefix="mix_in")["weights"], [[0.2, 0.8], [0.1, 0.9]])
    np.testing.assert_allclose(viz.mix_trace(h, prefix="mix_out")["weights"], [[0.5, 0.5], [0.7, 0.3]])
    np.testing.assert_allclose(viz.mix_trace(h, prefix="mix_out")["gamma"], [0.5, 0.5])
    view = viz.layer_mix({"in": h}, prefix="mix_in", steps_shown=2, live=False)
    assert view.data["layer_names"] == ["layer 0", "layer 1"]  # not ELMo's three: generic names
    np.testing.assert_allclose([p.get_height() for p in bar_axes(view.figure)[0].patches], [0.1, 0.9])


def test_a_dict_of_arrays_or_tensors_is_checked_and_sorted_by_step():
    w = np.array([[0.5, 0.5], [0.2, 0.8], [1 / 3, 2 / 3]])
    tr = viz.mix_trace({"steps": torch.tensor([30, 10, 20]), "weights": torch.tensor(w), "gamma": [3.0, 1.0, 2.0]})
    np.testing.assert_array_equal(tr["steps"], [10, 20, 30])
    np.testing.assert_allclose(tr["weights"], w[[1, 2, 0]])
    np.testing.assert_allclose(tr["gamma"], [1.0, 2.0, 3.0])
    assert tr["steps"].dtype == np.int64 and tr["weights"].dtype == np.float64


def test_missing_keys_are_named_with_the_keys_the_history_has():
    h = History()
    h.log(1, loss=2.0, acc=0.5)
    with pytest.raises(ValueError, match=r"no mix_w0, mix_gamma .*it has \['loss', 'acc'\]"):
        viz.mix_trace(h)
    holes = History()
    holes.log(1, mix_w0=0.5, mix_w2=0.5, mix_gamma=1.0)
    with pytest.raises(ValueError, match=r"no mix_w1 \("):
        viz.mix_trace(holes)
    no_gamma = History()
    no_gamma.log(1, mix_w0=0.5, mix_w1=0.5)
    with pytest.raises(ValueError, match=r"no mix_gamma \(") as err:
        viz.mix_trace(no_gamma)
    assert "mix_w0" not in str(err.value).split("(")[0]  # only what is missing is named as missing
    two = make_history([0.5, 0.5], steps=2, prefixes=("mix_in", "mix_out"))
    with pytest.raises(ValueError, match=r"the prefixes \['mix_in', 'mix_out'\]"):
        viz.mix_trace(two)
    with pytest.raises(ValueError, match=r"task 'SST': the history has no mix_w0"):  # named by task
        viz.layer_mix({"NER": make_history(FINAL["NER"]), "SST": h})


def test_weights_that_are_not_a_softmax_are_refused():
    h = History()
    h.log(1, mix_w0=1 / 3, mix_w1=1 / 3, mix_w2=1 / 3, mix_gamma=1.0)
    h.log(7, mix_w0=0.4, mix_w1=-0.2, mix_w2=1.5, mix_gamma=1.0)  # the parameters s_j, not softmax(s)_j
    with pytest.raises(ValueError, match=r"weights at step 7 .*sum 1.7000.*softmax"):
        viz.mix_trace(h)
    with pytest.raises(ValueError, match="NaN"):
        viz.mix_trace({"steps": [1], "weights": [[np.nan, 1.0]], "gamma": [1.0]})


def test_wrong_shapes_misaligned_series_and_empty_mixes_are_refused():
    with pytest.raises(ValueError, match=r"weights must be \(K steps, L layers\).*shape \(3,\)"):
        viz.mix_trace({"steps": [1, 2, 3], "weights": [0.2, 0.3, 0.5], "gamma": [1.0, 1.0, 1.0]})
    with pytest.raises(ValueError, match=r"steps must be \(2,\).*shape \(3,\)"):
        viz.mix_trace({"steps": [1, 2, 3], "weights": [[0.5, 0.5]] * 2, "gamma": [1.0, 1.0]})
    with pytest.raises(ValueError, match=r"gamma must be \(2,\).*shape \(\)"):
        viz.mix_trace({"steps": [1, 2], "weights": [[0.5, 0.5]] * 2, "gamma": 1.0})
    with pytest.raises(ValueError, match=r"missing \['gamma'\]"):
        viz.mix_trace({"steps": [1], "weights": [[1.0]]})
    with pytest.raises(TypeError, match="History"):
        viz.mix_trace([[0.5, 0.5]])
    late = History()
    late.log(1, mix_w0=0.5, mix_w1=0.5)
    late.log(2, mix_w0=0.5, mix_w1=0.5, mix_gamma=1.0)
    with pytest.raises(ValueError, match="mix_gamma was logged at other steps than mix_w0"):
        viz.mix_trace(late)
    with pytest.raises(ValueError, match="at least one task"):
        viz.layer_mix({})
    with pytest.raises(ValueError, match="at least one task"):
        viz.layer_mix_figure({})
    with pytest.raises(ValueError, match=r"same layers.*'NER': 3, 'two': 2"):
        viz.layer_mix_figure({"NER": make_history(FINAL["NER"]), "two": make_history([0.4, 0.6])})
    with pytest.raises(ValueError, match=r"2 layer names"):
        viz.layer_mix_figure({"NER": make_history(FINAL["NER"])}, layer_names=["a", "b"])
    with pytest.raises(ValueError, match=r"logged no step \[999\]"):
        viz.layer_mix({"NER": make_history(FINAL["NER"])}, steps_shown=[1, 999])
    with pytest.raises(ValueError, match="steps_shown must be >= 1"):
        viz.layer_mix({"NER": make_history(FINAL["NER"])}, steps_shown=0)


# -- the static figure ----------------------------------------------------------------------------------------

def test_static_figure_has_one_bar_group_per_task_at_its_final_weights(view):
    bars = bar_axes(view.figure)
    assert len(bars) == len(FINAL)
    for ax, task in zip(bars, FINAL):
        heights = [p.get_height() for p in ax.patches]
        np.testing.assert_allclose(heights, FINAL[task], atol=1e-12)
        assert [t.get_text() for t in ax.texts] == [f"{w:.2f}" for w in FINAL[task]]  # each value written
        assert ax.get_title() == f"{task}\nγ = {GAMMA[task]:.2f}"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["token", "biLSTM 1", "biLSTM 2"]
        assert dashed_levels(ax) == pytest.approx([1 / 3])  # the uniform level
    assert view.figure._suptitle.get_text() == "ELMo's mixes"


def test_static_figure_draws_each_layer_s_weight_over_the_steps(view):
    lines = line_axes(view.figure)
    assert len(lines) == len(FINAL)
    for ax, task in zip(lines, FINAL):
        w, _ = trajectory(FINAL[task], gamma_end=GAMMA[task])
        solid = [line for line in ax.lines if line.get_linestyle() == "-"]
        assert len(solid) == 3  # one per layer
        for j, line in enumerate(solid):
            np.testing.assert_array_equal(line.get_xdata(), np.arange(1, K + 1))
            np.testing.assert_allclose(line.get_ydata(), w[:, j])
        assert dashed_levels(ax) == pytest.approx([1 / 3])
    assert [t.get_text() for t in lines[0].get_legend().get_texts()] == ["token", "biLSTM 1", "biLSTM 2",
                                                                          "uniform 1/L"]


def test_long_runs_are_subsampled_keeping_the_first_and_last_step():
    h = make_history(FINAL["SST"], steps=1500, first_step=10)
    tr = viz.mix_trace(h)
    fig = viz.layer_mix_figure({"SST": h})
    (ax,) = line_axes(fig)
    for j, line in enumerate(ax.lines[:3]):
        x = np.asarray(line.get_xdata())
        assert len(x) <= lm.MAX_POINTS and x[0] == 10 and x[-1] == 1509
        np.testing.assert_allclose(line.get_ydata(), tr["weights"][x - 10, j])
    np.testing.assert_array_equal(lm.trace_points(5), np.arange(5))


def test_default_layer_names_and_given_ones():
    assert lm.default_layer_names(3) == ("token", "biLSTM 1", "biLSTM 2")
    assert lm.default_layer_names(4) == ("layer 0", "layer 1", "layer 2", "layer 3")
    fig = viz.layer_mix_figure({"NER": make_history(FINAL["NER"])}, layer_names=["char CNN", "L1", "L2"])
    assert [t.get_text() for t in bar_axes(fig)[0].get_xticklabels()] == ["char CNN", "L1", "L2"]


# -- the widget -----------------------------------------------------------------------------------------------

def test_task_menu_and_view_toggle_are_jslinked_to_their_stacks(view):
    w = view.widget
    assert isinstance(view, viz.View) and isinstance(view.figure, viz.BookFigure)
    assert isinstance(w, viz.StackView) and isinstance(w.control, widgets.ToggleButtons)
    assert list(w.control.options) == ["per task", "tasks side by side"]
    assert list(w.stack.children) == [w.task_view, w.stack.children[1]]
    tv = w.task_view
    assert isinstance(tv.control, widgets.Dropdown) and list(tv.control.options) == list(FINAL)
    assert list(tv.stack.children) == w.step_views
    for sv in (w, tv, *w.step_views):  # browser-side links: the book switches views without a kernel
        assert isinstance(sv.link, Link) and not isinstance(sv.link, DirectionalLink)
        assert sv.link.source == (sv.control, "index") and sv.link.target == (sv.stack, "selected_index")
    tv.select("SST")
    assert tv.control.index == 1


def test_each_task_has_a_step_slider_over_precomputed_steps_ending_at_the_end_of_training(view):
    for task, sv in zip(FINAL, view.widget.step_views):
        assert isinstance(sv.control, widgets.SelectionSlider)
        assert view.data["steps_shown"][task] == [1, 11, 21, 30, 40]  # 5 evenly spaced, first and last
        assert list(sv.control.options) == ["1", "11", "21", "30", "40"]
        assert sv.control.index == 4 and sv.stack.selected_index == 4  # shown first: the end of training
        pngs = [bytes(c.value) for c in sv.stack.children]
        assert all(p.startswith(PNG_MAGIC) for p in pngs) and len(set(pngs)) == 5  # the bars move


def test_a_precomputed_image_shows_the_weights_of_its_own_step(view):
    tr = view.data["traces"]["NER"]
    names, top = view.data["layer_names"], lm._top(view.data["traces"])
    child = bytes(view.widget.step_views[0].stack.children[2].value)  # step 21 = index 20
    at = {i: viz.figure_to_png(lm.step_figure(tr, i, names, "NER", top)) for i in (19, 20, 21)}
    assert child == at[20] and child != at[19] and child != at[21]
    fig = lm.step_figure(tr, 0, names, "NER", top)  # step 1: still uniform
    bars, traj = fig.axes
    np.testing.assert_allclose([p.get_height() for p in bars.patches], [1 / 3] * 3)
    assert bars.get_title() == "NER: step 1\nγ = 1.00"
    marks = [line for line in traj.lines if line.get_linestyle() == ":"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [1, 1]  # the step marked on the trajectories


def test_given_steps_are_the_ones_precomputed():
    h = make_history(FINAL["NER"])
    view = viz.layer_mix({"NER": h}, steps_shown=[40, 1, 10], live=False)
    assert view.data["steps_shown"] == {"NER": [1, 10, 40]}
    assert list(view.widget.step_views[0].control.options) == ["1", "10", "40"]
    assert view.widget.live is None and len(view.widget.children) == 3  # hint, toggle, stack: no live box


def test_live_slider_redraws_the_bars_at_the_chosen_logged_step(view):
    box = view.widget.live
    assert isinstance(view.widget.children[-1], widgets.Accordion) and view.widget.children[-1].children == (box,)
    assert box.shown["task"] == "NER" and box.shown["step"] == K  # starts at the end of training
    assert list(box.step_slider.options) == list(range(1, K + 1))  # every logged step
    box.step_slider.value = 21
    tr = view.data["traces"]["NER"]
    assert box.shown["step"] == 21 and box.shown["index"] == 20
    np.testing.assert_allclose(box.shown["weights"], tr["weights"][20])
    assert box.shown["gamma"] == pytest.approx(tr["gamma"][20])
    # the same picture as the precomputed step 21 of the book's slider
    assert bytes(box.image.value) == bytes(view.widget.step_views[0].stack.children[2].value)
    box.task_menu.value = "SST"
    assert box.shown["task"] == "SST" and box.shown["step"] == K  # a new task starts at its end
    np.testing.assert_allclose(box.shown["weights"], FINAL["SST"])
    assert bytes(box.image.value) == bytes(view.widget.step_views[1].stack.children[-1].value)
    box.step_slider.value = 1
    np.testing.assert_allclose(box.shown["weights"], [1 / 3] * 3)


def test_tasks_side_by_side_are_grouped_bars_of_the_final_weights_with_gammas(view):
    grouped = view.widget.stack.children[1]
    assert isinstance(grouped, widgets.Image) and bytes(grouped.value).startswith(PNG_MAGIC)
    fig = lm.tasks_figure(view.data["traces"], view.data["layer_names"])
    (ax,) = fig.axes
    assert len(ax.patches) == len(FINAL) * 3
    assert [t.get_text() for t in ax.get_xticklabels()] == ["token", "biLSTM 1", "biLSTM 2"]
    for t, task in enumerate(FINAL):  # ax.bar adds one task's bars at a time
        mine = ax.patches[3 * t: 3 * t + 3]
        np.testing.assert_allclose([p.get_height() for p in mine], FINAL[task], atol=1e-12)
        assert [round(p.get_x() + p.get_width() / 2) for p in mine] == [0, 1, 2]  # one bar per layer group
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["NER (γ = 1.60)", "SST (γ = 0.70)"]
    assert bytes(grouped.value) == viz.figure_to_png(fig)


def test_images_stay_small(view):
    w = view.widget
    images = [c for sv in w.step_views for c in sv.stack.children] + [w.stack.children[1], w.live.image]
    step_images = images[:-2] + images[-1:]  # the precomputed steps and the live image: one size
    assert {png_size(bytes(img.value)) for img in step_images} == {png_size(bytes(images[-1].value))}
    width, height = png_size(bytes(images[-1].value))
    assert 300 <= width <= 520 and 150 <= height <= 240  # readable, but a page column wide at most
    gw, gh = png_size(bytes(w.stack.children[1].value))
    assert gw <= 700 and gh <= 260
    sizes = [len(img.value) for img in images]
    assert max(sizes) < 20_000 and sum(sizes) < 12 * 15_000, sizes


def test_the_embedded_widget_state_carries_every_image_and_link(view):
    """What a built page has without a kernel: the widget state with each image and each jslink in it."""
    state = embed_data(views=[view.widget])["manager_state"]["state"]
    w = view.widget
    for sv in (w, w.task_view, *w.step_views):
        link = state[sv.link.model_id]
        assert link["model_name"] == "LinkModel"
        assert link["state"]["source"] == [f"IPY_MODEL_{sv.control.model_id}", "index"]
        assert link["state"]["target"] == [f"IPY_MODEL_{sv.stack.model_id}", "selected_index"]
        assert state[sv.stack.model_id]["state"]["children"] == [f"IPY_MODEL_{c.model_id}" for c in sv.stack.children]
    for sv in w.step_views:
        assert state[sv.stack.model_id]["state"]["selected_index"] == 4
        for child in sv.stack.children:
            (buffer,) = state[child.model_id]["buffers"]
            assert buffer["path"] == ["value"] and base64.b64decode(buffer["data"]) == bytes(child.value)


def test_displaying_the_view_shows_the_figure_then_the_widget(view, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append(obj))
    view._ipython_display_()
    assert len(shown) == 2 and isinstance(shown[0], IPython.display.Image) and shown[1] is view.widget
    assert shown[0].data.startswith(PNG_MAGIC)


def test_one_history_alone_is_one_task():
    view = viz.layer_mix(make_history(FINAL["SST"], steps=3), steps_shown=3, live=False)
    assert list(view.data["traces"]) == ["task"] and view.data["steps_shown"] == {"task": [1, 2, 3]}
