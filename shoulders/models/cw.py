"""The ranking language model of Collobert & Weston (2008, "A unified architecture for natural language
processing", ICML; details in Collobert et al. 2011, JMLR 12, sec. 4.6).

Not a language model in the probabilistic sense: instead of a softmax over the next word, a network gives a whole
window of text one score, and learns to score a real window above the same window with its centre word replaced:

    f(s)   = w_2^T hardtanh(W_1 [E s_1; E s_2; ...; E s_k] + b_1) + b_2      (a scalar per window s of k words)
    loss   = sum_{s in windows} sum_{w in V} max(0, 1 - f(s) + f(s^w))        s^w: centre word of s replaced by w

The sum over the whole vocabulary is estimated with sampled corruptions: ``negatives`` words per window drawn
uniformly (an unbiased estimate of the mean over V) from a seeded generator; the loss here is the *mean* hinge
over windows and corruptions. No output layer of size |V| means a step costs no more for a large vocabulary --
the direction "a different target" of the NNLM's descendants -- but there are no probabilities, hence no
perplexity: the chapter evaluates C&W by its ranking accuracy and its embedding's nearest neighbours.

The batches are whole windows (:func:`shoulders.text.windows.window_batches`), ``(B, k)`` with k odd.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, Iterable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import ConfigError
from ..text.stream import LMStream
from ..text.windows import WindowBatches, window_batches
from .ids import check_ids
from .nnlm import WindowLMConfig

__all__ = ["CW", "CWConfig", "corrupt_centre", "hinge_rank_loss"]


@dataclasses.dataclass
class CWConfig(WindowLMConfig):
    """The C&W window scorer: ``window`` words (odd), ``emb_dim`` features each, ``hidden`` hardtanh units."""

    window: int = 11
    emb_dim: int = 50
    hidden: int = 100
    negatives: int = 1  # corrupted windows per real window
    seed: int = 0  # seeds the generator that draws the corrupting words

    presets: ClassVar = {
        # a narrow window and 8 corruptions per window let the short runs learn context, not only word frequency
        "smoke": dict(window=3, emb_dim=50, hidden=100, negatives=8, batch_size=256, steps=2_000, warmup=50,
                      lr=1e-2, weight_decay=0.0, max_vocab=10_000, train_tokens=200_000, eval_tokens=20_000),
        "cpu": dict(window=5, emb_dim=50, hidden=100, negatives=8, batch_size=256, steps=8_000, warmup=300,
                    lr=5e-3, weight_decay=0.0),
        # Collobert et al. 2011: window 11, 50-dimensional embeddings, 100 hidden units
        "full": dict(window=11, emb_dim=50, hidden=100, negatives=8, batch_size=512, steps=200_000, warmup=2_000,
                     lr=2e-3, weight_decay=0.0),
    }

    def validate(self) -> None:
        self._check_common()
        if self.window < 1 or self.window % 2 == 0:
            raise ConfigError(f"window must be a positive odd number (a centre word), got {self.window}")
        if min(self.emb_dim, self.hidden, self.negatives) <= 0:
            raise ConfigError("emb_dim, hidden and negatives must be positive")

    def build(self) -> "CW":
        return CW(self)

    def example_batch(self, batch_size: int = 2) -> torch.Tensor:
        """A tiny random batch of windows ``(B, window)``, for preset health checks."""
        g = torch.Generator().manual_seed(0)
        return torch.randint(self.vocab_size, (batch_size, self.window), generator=g)

    def step_batch(self) -> torch.Tensor:
        """A random batch with the exact shapes of one training step of this preset: ``batch_size`` windows
        ``(B, window)`` (the model draws its ``negatives`` corruptions per window itself), ids below
        ``vocab_size`` (WikiText-2's 33,278 words at ``full``). For the ``full``-shape checks."""
        g = torch.Generator().manual_seed(0)
        return torch.randint(self.vocab_size, (self.batch_size, self.window), generator=g)

    def batches(self, stream: LMStream, train: bool = True) -> WindowBatches:
        """``(B, window)`` windows: shuffled with ``batch_size`` for training, in order with ``eval_batch_size``."""
        return window_batches(stream, self.window, self.batch_size if train else self.eval_batch_size, shuffle=train)


def corrupt_centre(windows: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
    """Copies of each window with its centre word replaced: windows (B, k), words (B, K) -> (B, K, k)."""
    out = windows.unsqueeze(1).repeat(1, words.shape[1], 1)  # (B, K, k)
    out[:, :, windows.shape[1] // 2] = words
    return out


def hinge_rank_loss(real: torch.Tensor, corrupted: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """mean over (window, corruption) of max(0, margin - f(s) + f(s^w)); real (B,), corrupted (B, K)."""
    return F.relu(margin - real.unsqueeze(1) + corrupted).mean()


class CW(nn.Module):
    """Lookup -> concatenation -> linear -> hardtanh -> linear to one score (Collobert & Weston 2008).

    Attributes: ``embed`` (the |V| x d lookup table, the part later reused as word vectors), ``hidden``
    (W_1, b_1), ``score_out`` (w_2, b_2).
    """

    def __init__(self, cfg: CWConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.emb_dim)  # |V| x d
        self.hidden = nn.Linear(cfg.window * cfg.emb_dim, cfg.hidden)  # W_1, b_1
        self.score_out = nn.Linear(cfg.hidden, 1)  # w_2, b_2
        nn.init.normal_(self.embed.weight, std=0.1)
        self._generator: torch.Generator | None = None

    def score(self, windows: torch.Tensor) -> torch.Tensor:
        """f(s) for each window: (..., k) ids -> (...,) scores."""
        check_ids(windows, "windows", self.cfg.vocab_size, dims=None, width=self.cfg.window)
        return self._score(windows)

    def _score(self, windows: torch.Tensor) -> torch.Tensor:
        """:meth:`score` of windows already checked."""
        feats = self.embed(windows).flatten(-2)  # (..., k d): the concatenated lookups
        return self.score_out(F.hardtanh(self.hidden(feats))).squeeze(-1)  # (...,)

    def sample_corruptions(self, batch_size: int, negatives: int, device: torch.device | str,
                           generator: torch.Generator | None = None, noise: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, K)`` replacement words: uniform over the vocabulary (the paper's sum over all w), or drawn in
        proportion to ``noise`` (|V| weights, e.g. unigram counts). By default they come from the model's own
        generator, seeded with ``cfg.seed`` on first use (and after :meth:`reset_generator`)."""
        device = torch.device(device)
        if generator is None:
            if self._generator is None or self._generator.device != device:
                self._generator = torch.Generator(device=device)
                self._generator.manual_seed(self.cfg.seed)
            generator = self._generator
        if noise is None:
            return torch.randint(self.cfg.vocab_size, (batch_size, negatives), generator=generator, device=device)
        draws = torch.multinomial(noise.to(device, torch.float), batch_size * negatives, replacement=True,
                                  generator=generator)
        return draws.view(batch_size, negatives)

    def reset_generator(self) -> None:
        """Start the corruption draws again from ``cfg.seed``."""
        self._generator = None

    def forward(self, windows: torch.Tensor, corrupt: torch.Tensor | None = None) -> torch.Tensor:
        """Mean hinge ranking loss of real windows (B, k) against their corruptions.

        ``corrupt`` (B, K) gives the replacement centre words; ``None`` draws ``cfg.negatives`` per window.
        """
        check_ids(windows, "windows", self.cfg.vocab_size, width=self.cfg.window)  # (B, k)
        if corrupt is None:
            corrupt = self.sample_corruptions(windows.shape[0], self.cfg.negatives, windows.device)
        check_ids(corrupt, "corrupt", self.cfg.vocab_size)  # (B, K) replacement centre words
        real = self._score(windows)  # (B,)
        fake = self._score(corrupt_centre(windows, corrupt))  # (B, K): both checked above
        return hinge_rank_loss(real, fake)

    @torch.no_grad()
    def ranking_metrics(self, batches: Iterable[torch.Tensor], negatives: int | None = None, seed: int = 0,
                        noise: torch.Tensor | None = None) -> dict[str, float]:
        """Mean hinge loss and ranking accuracy (fraction of pairs with f(s) > f(s^w)) over ``batches`` of
        windows, with corruptions from a fresh generator seeded by ``seed`` (the same pairs every call).

        Uniform corruptions are mostly rare words, so word frequency alone ranks most pairs right; ``noise`` =
        the unigram counts draws frequency-matched corruptions, where only the context can tell (chance: 0.5).
        """
        was_training = self.training
        self.eval()
        dev = next(self.parameters()).device
        gen = torch.Generator(device=dev)
        gen.manual_seed(seed)
        k = negatives or self.cfg.negatives
        hinge, correct, pairs = 0.0, 0.0, 0
        for w in batches:
            w = w.to(dev)
            words = self.sample_corruptions(w.shape[0], k, dev, generator=gen, noise=noise)
            real, fake = self.score(w), self.score(corrupt_centre(w, words))  # (B,), (B, K)
            hinge += float(F.relu(1.0 - real.unsqueeze(1) + fake).sum())
            correct += float((real.unsqueeze(1) > fake).sum())
            pairs += fake.numel()
        self.train(was_training)
        if pairs == 0:
            raise ValueError("ranking_metrics needs at least one window")
        return {"hinge": hinge / pairs, "rank_acc": correct / pairs}

    def extra_repr(self) -> str:
        c = self.cfg
        return f"window={c.window}, d={c.emb_dim}, h={c.hidden}, negatives={c.negatives}"
