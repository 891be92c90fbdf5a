"""shoulders.viz.next_word: the next-word explorer shows exactly a model's top-k, with one panel per context.

The models here are tiny fakes with ``distribution(context)`` and a vocabulary, so these tests do not depend on
the n-gram package.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from ipywidgets.widgets.widget_link import Link  # noqa: E402

from shoulders import viz  # noqa: E402
from shoulders.viz import next_word as nw  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
WORDS = ["<unk>", "the", "cat", "sat", "on", "mat", "dog", "ran", "<eos>"]


class FakeCounts:
    def __init__(self, vocab):
        self.vocab = vocab


class FakeLM:
    """A deterministic 'model': the distribution depends on the last word of the context it is given."""

    def __init__(self, n=None, vocab=WORDS, via_counts=True, seed=0):
        if n is not None:
            self.n = n
        if via_counts:
            self.counts = FakeCounts(vocab)
        else:
            self.vocab = vocab
        self.size = len(vocab)
        self.seen = []
        self.seed = seed

    def distribution(self, context):
        self.seen.append(tuple(context))
        key = sum(map(ord, context[-1])) if context else 7
        rng = np.random.default_rng(key + 1000 * self.seed)
        p = rng.random(self.size) + np.arange(self.size) * 1e-6  # distinct values: a unique order
        return p / p.sum()


def bars_of(ax):
    """(words top to bottom, widths top to bottom) of a horizontal bar chart."""
    patches = sorted(ax.patches, key=lambda r: -r.get_y())
    labels = {round(t, 6): lab.get_text() for t, lab in zip(ax.get_yticks(), ax.get_yticklabels())}
    words = [labels[round(r.get_y() + r.get_height() / 2, 6)] for r in patches]
    return words, [r.get_width() for r in patches]


def test_top_k_is_the_k_largest_in_order():
    lm = FakeLM()
    p = lm.distribution(("the",))
    pairs = nw.top_k(lm, "the", k=4)
    order = np.argsort(-p)[:4]
    assert [w for w, _ in pairs] == [WORDS[i] for i in order]
    np.testing.assert_allclose([q for _, q in pairs], p[order])
    assert all(a >= b for (_, a), (_, b) in zip(pairs, pairs[1:]))


def test_top_k_breaks_ties_by_id_and_checks_sizes():
    class Flat:
        vocab = ["a", "b", "c", "d"]

        def distribution(self, context):
            return np.array([0.25, 0.25, 0.25, 0.25])

    assert [w for w, _ in nw.top_k(Flat(), "", k=3)] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="vocabulary"):
        nw.top_k(Flat(), "", k=2, vocab=["a", "b"])
    with pytest.raises(ValueError, match="k must be"):
        nw.top_k(Flat(), "", k=0)


def test_an_order_n_model_sees_only_its_last_n_minus_1_words():
    lm3, lm1 = FakeLM(n=3), FakeLM(n=1)
    nw.top_k(lm3, "a b c d", k=2)
    nw.top_k(lm1, "a b c d", k=2)
    assert lm3.seen[-1] == ("c", "d") and lm1.seen[-1] == ()


@pytest.mark.parametrize("vocab", [WORDS, {w: i for i, w in reversed(list(enumerate(WORDS)))}])
def test_vocab_words_from_list_mapping_model_or_counts(vocab):
    assert nw.vocab_words(vocab=vocab) == WORDS
    assert nw.vocab_words(FakeLM(via_counts=False)) == WORDS
    assert nw.vocab_words(FakeLM(via_counts=True)) == WORDS
    with pytest.raises(ValueError, match="vocab"):
        nw.vocab_words(object())


def test_vocab_words_from_a_shoulders_vocab():
    from shoulders.text import Vocab

    v = Vocab.build([["the", "cat"], ["the", "dog"]], specials=["<eos>"], unk="<unk>")
    assert nw.vocab_words(vocab=v) == v.tokens


def test_static_figure_shows_exactly_the_top_k_in_order():
    lm = FakeLM(n=2)
    contexts = ["the", "the cat", "on the mat"]
    fig = viz.next_word_figure(lm, contexts, k=5, ncols=2)
    assert len(fig.axes) == 3
    for ax, context in zip(fig.axes, contexts):
        p = lm.distribution((context.split()[-1],))
        order = np.argsort(-p)[:5]
        words, widths = bars_of(ax)
        assert words == [WORDS[i] for i in order]
        np.testing.assert_allclose(widths, p[order])
        assert ax.get_title().endswith("→") and context.split()[-1] in ax.get_title()


def test_explorer_has_one_panel_per_context_and_a_browser_side_link():
    models = {n: FakeLM(n=n, seed=n) for n in (1, 2, 3)}
    contexts = ["the", "the cat", "cat sat on"]
    view = viz.next_word_explorer(models, contexts, k=4)
    assert isinstance(view, viz.View) and isinstance(view.widget, widgets.VBox)
    stack = view.data["stack"]
    assert isinstance(stack, viz.StackView) and len(stack.stack.children) == len(contexts)
    assert list(stack.control.options) == contexts
    assert all(bytes(c.value).startswith(PNG_MAGIC) for c in stack.stack.children)
    assert isinstance(stack.link, Link) and stack.link.target == (stack.stack, "selected_index")
    # the static figure is the default (last) model's top-k for each context
    assert len(view.figure.axes) == len(contexts)
    for ax, (label, pairs) in zip(view.figure.axes, view.data["topk"].items()):
        words, widths = bars_of(ax)
        assert words == [w for w, _ in pairs] and len(words) == 4
        np.testing.assert_allclose(widths, [p for _, p in pairs])
        assert pairs == nw.top_k(models[3], label, k=4)


def test_live_box_redraws_on_a_new_context_and_reports_errors():
    models = {1: FakeLM(n=1), 2: FakeLM(n=2, seed=2)}
    view = viz.next_word_explorer(models, ["the", "cat"], k=3)
    box = view.data["live"]
    first = bytes(box.image.value)
    assert first.startswith(PNG_MAGIC)
    box.text.value = "the dog"
    assert bytes(box.image.value) != first and box.status.value == ""
    box.model_slider.value = 1
    assert models[1].seen[-1] == ()
    box.k_slider.value = 6
    assert bytes(box.image.value).startswith(PNG_MAGIC)

    class Broken(FakeLM):
        def distribution(self, context):
            if "zzz" in context:
                raise KeyError("no such word")
            return super().distribution(context)

    view = viz.next_word_explorer(FakeLM(n=2), ["the"], k=2)
    assert len(view.data["live"].children[0].children) == 2  # one model: text box + top-k, no model slider
    live = viz.next_word_explorer(Broken(n=2), ["the"], k=2).data["live"]
    before = bytes(live.image.value)
    live.text.value = "zzz"
    assert "no such word" in live.status.value and bytes(live.image.value) == before
    live.text.value = "cat"
    assert live.status.value == ""


def test_single_model_and_bad_input():
    view = viz.next_word_explorer(FakeLM(), ["the", "cat"], k=3, live=False)
    assert view.data["live"] is None and len(view.widget.children) == 1
    with pytest.raises(ValueError, match="context"):
        viz.next_word_explorer(FakeLM(), [], k=3)
    with pytest.raises(KeyError):
        viz.next_word_explorer({1: FakeLM()}, ["the"], default=5)
    with pytest.raises(ValueError, match="differ"):
        viz.next_word_explorer(FakeLM(), ["the cat", "the  cat"])
