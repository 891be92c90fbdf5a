"""Figures and widgets of the book: static first, interactive where a kernel (or a Stack) allows.

Every widget view comes with a matplotlib figure of its default state (:class:`View`), so the rendered book and
the nbval outputs show the picture without JavaScript or a kernel. Views with a few states (schedules, heads,
layers) are a :func:`stack_view` of precomputed images whose control is ``jslink``-ed to the Stack, so they
switch in the static book too; sliders that recompute need a live kernel.

Public surface:

* :func:`training_curves` -- loss and metrics against the step, from a run's history (static figure);
* :class:`LivePlot` -- a ``fit`` callback that redraws the loss in a notebook while the model trains;
* :func:`lr_curves` -- every learning-rate schedule with sliders, plus the lr a run recorded (:class:`View`);
* :func:`stage_rates` -- every layer group's recorded learning rate in each of ULMFiT's stages (:class:`View`);
* :func:`layer_mix` -- ELMo's softmax-normalised layer weights and γ per task, and how they moved while it trained
  (:class:`View`); :func:`layer_mix_figure` its static figure, :func:`mix_trace` the weights a run logged;
* :func:`stack_view` / :class:`StackView` -- precomputed images (or any widgets) switched in the browser;
* :class:`View` -- a static figure plus a widget, displayed in that order;
* :func:`transfer_bars` -- pre-trained against from scratch and the baseline, task by task, seeds as dots;
* :func:`label_budget_figure` -- score against the number of labelled examples, per encoder (ULMFiT's Fig. 3);
* :func:`pretraining_steps_figure` -- held-out pre-training accuracy and a task's fine-tuned score per snapshot;
* :func:`senteval_bars` -- frozen sentence encoders' test accuracy on the small SentEval, the majority class dashed;
* :func:`permutation_figure` -- XLNet's two attention masks for one sentence and one factorisation order;
* :func:`score_curves` -- a score against any quantity (transferred layers, pre-training steps), one panel a task;
* :func:`figure_to_png`, :func:`figure_to_image_widget`, :func:`subplots`, :class:`BookFigure` -- figures
  outside pyplot, and their PNG inside an ``ipywidgets.Image``.
"""
from __future__ import annotations

from .attention import attention_heads
from .curves import expand_keys, training_curves
from .figure import DPI, BookFigure, figure_to_image_widget, figure_to_png, subplots
from .layer_weights import layer_mix, layer_mix_figure, mix_trace
from .live import LivePlot
from .lr import default_schedules, lr_curves, lr_figure, recorded_lr, schedule_steps, stage_rates
from .next_word import next_word_explorer, next_word_figure, top_k
from .permutation import permutation_figure
from .senteval import senteval_bars
from .stack import StackView, stack_view
from .transfer import label_budget_figure, pretraining_steps_figure, score_curves, transfer_bars
from .view import View

__all__ = [
    "DPI",
    "BookFigure",
    "LivePlot",
    "StackView",
    "View",
    "attention_heads",
    "default_schedules",
    "expand_keys",
    "figure_to_image_widget",
    "figure_to_png",
    "label_budget_figure",
    "layer_mix",
    "permutation_figure",
    "senteval_bars",
    "layer_mix_figure",
    "pretraining_steps_figure",
    "lr_curves",
    "lr_figure",
    "mix_trace",
    "next_word_explorer",
    "next_word_figure",
    "recorded_lr",
    "score_curves",
    "schedule_steps",
    "stack_view",
    "stage_rates",
    "subplots",
    "top_k",
    "training_curves",
    "transfer_bars",
]
