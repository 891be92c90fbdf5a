"""XLNet's factorisation order as a picture (Yang et al. 2019, Figure 4 in the appendix draws the same thing):
for one sentence and one sampled order, which positions each position may attend to in the content stream and in
the query stream.

A cell (i, j) is filled where position i may see position j. Rows and columns are in the text's order -- the
permutation moves no token, only the masks -- and each row's label carries its place in the factorisation order
(targets only: the context, which every position sees, is marked ``ctx``). Targets are the positions the query
stream predicts; their query-stream rows never include themselves, their content-stream rows do.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .figure import BookFigure, subplots

__all__ = ["permutation_figure"]


def permutation_figure(tokens: Sequence[str], perm_mask: torch.Tensor, target_mapping: torch.Tensor,
                       title: str = "") -> BookFigure:
    """Two panels, content stream and query stream, for ``tokens`` (T) and the masks of
    :func:`shoulders.models.xlnet.permutation_masks` (``perm_mask`` ``(T, T)`` True = hidden, ``target_mapping``
    ``(P, T)``)."""
    T = len(tokens)
    if tuple(perm_mask.shape) != (T, T) or target_mapping.shape[-1] != T:
        raise ValueError(f"masks {tuple(perm_mask.shape)} / {tuple(target_mapping.shape)} do not fit {T} tokens")
    query = ~perm_mask.bool().numpy()  # (T, T): what the query stream of i may see
    content = query | np.eye(T, dtype=bool)  # the content stream also sees itself
    targets = target_mapping.argmax(-1).tolist()
    rank = {p: k + 1 for k, p in enumerate(targets)}
    rows = [f"{t} ({rank[i]})" if i in rank else f"{t} (ctx)" for i, t in enumerate(tokens)]
    fig, axes = subplots(1, 2, figsize=(2.0 + 0.42 * T * 2, 1.2 + 0.36 * T))
    for ax, allowed, name in ((axes[0], content, "content stream h"), (axes[1], query, "query stream g")):
        image = np.where(allowed, 1.0, 0.0)
        for i in targets:  # targets' rows in the model's blue, the context's in grey
            image[i] = np.where(allowed[i], 2.0, 0.0)
        ax.imshow(image, cmap="Blues", vmin=0, vmax=2.2, aspect="equal")
        ax.set_xticks(range(T))
        ax.set_xticklabels(tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(T))
        ax.set_yticklabels(rows, fontsize=7)
        ax.set_xlabel("may attend to (key position)", fontsize=7)
        ax.set_title(name, fontsize=8)
        ax.set_xticks(np.arange(-0.5, T), minor=True)
        ax.set_yticks(np.arange(-0.5, T), minor=True)
        ax.grid(which="minor", color="white", lw=0.5)
        ax.tick_params(which="minor", length=0)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig
