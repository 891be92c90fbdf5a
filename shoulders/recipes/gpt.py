"""Pre-training GPT on WikiText-2: a left-to-right Transformer language model (Radford et al. 2018, §3.1, §4.1),
the book's ``gpt`` giant.

    L1(U) = sum_i log P(u_i | u_{i-k}, ..., u_{i-1}; Θ)                          (GPT-1, eq. 1; k = the context)

The recipe, scaled down: WikiText-2's training text (its lines as the LM reads them, :func:`shoulders.text.
gpt_inputs.lm_text`) encoded once with a byte-level BPE vocabulary learned on it (:class:`shoulders.text.bpe.
ByteLevelBPE`; GPT-1 used 40,000 merges on BooksCorpus, GPT-2 50,257 byte-level entries on WebText); each pass
cuts the stream into windows of ``max_len + 1`` tokens from a random offset and shuffles them
(:class:`ChunkBatches`); Adam with linear warm-up and cosine decay to 0 (GPT-1 §4.1: "increased linearly from zero
over the first 2000 updates and annealed to 0 using a cosine schedule"), weight decay 0.01 on matrices
(GPT-1's modified L2), dropout 0.1. The validation perplexity is measured with overlapping windows
(:func:`shoulders.evaluate.perplexity.sliding_window_nll`) and reported per BPE token and **per word** -- the
total log-likelihood of the same text divided by its words (``<eos>`` at each line end counted as a word, as the
word-level chapters count it) -- the number comparable with chapters 1, 3 and 11.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import torch

from ..config import Config, ConfigError, check_snapshots
from ..data.corpora import wikitext2
from ..evaluate.perplexity import perplexity, sliding_window_nll
from ..models.gpt import GPTConfig, GPTLMHeadModel
from ..text.bpe import ByteLevelBPE
from ..text.gpt_inputs import SPECIALS, lm_text
from ..text.tokenizer_cache import learned_once
from ..train.callbacks import Snapshots
from ..train.loop import fit
from ..train.optimizers import adamw
from ..train.schedules import cosine_warmup
from .artefact import Artefact

__all__ = ["CharGPT", "CharGPTConfig", "ChunkBatches", "GPTPretrainingConfig", "WikiTextForGPT", "build",
           "perplexity_per_word", "train_char_gpt", "train_giant", "wikitext_for_gpt", "wikitext_lines_text"]


def random_windows(vocab_size: int, batch_size: int, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)``, each ``(batch_size, T)``: random ids and the same shifted by one (a config's example batch)."""
    ids = torch.randint(0, vocab_size, (batch_size, T + 1), generator=torch.Generator().manual_seed(0))
    return ids[:, :-1], ids[:, 1:]


class _WindowLMConfig(Config):
    """What the two GPT run configs share: a ``model_config(vocab_size)``, and the model and batches built from it
    (``vocab_size``, ``batch_size``, ``max_len`` are the subclass's fields)."""

    def model_config(self, vocab_size: int) -> GPTConfig:
        raise NotImplementedError

    def build(self) -> GPTLMHeadModel:
        return GPTLMHeadModel(self.model_config(self.vocab_size))

    def example_batch(self, batch_size: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
        return random_windows(self.vocab_size, batch_size, min(12, self.max_len))

    def step_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A random batch with the exact shapes of one training step: ``batch_size`` windows of ``max_len``."""
        return random_windows(self.vocab_size, self.batch_size, self.max_len)


@dataclasses.dataclass
class GPTPretrainingConfig(_WindowLMConfig):
    """How the GPT giant is pre-trained at each scale: the architecture (:class:`~shoulders.models.gpt.GPTConfig`'s
    fields) and the run."""

    d_model: int = 256
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 1024
    max_len: int = 128            # the context k of eq. 1 (GPT-1: 512)
    norm: str = "pre"             # "post": GPT-1's LayerNorm(x + Sublayer(x)); "pre": GPT-2's
    activation: str = "gelu"
    dropout: float = 0.1          # residual, embedding and attention dropout (GPT-1 §4.1)
    vocab_size: int = 8_000       # byte-level BPE entries learned on WikiText-2 train, the specials included
    bpe_lines: int | None = None  # learn the BPE on the first N lines of train (smoke)
    train_lines: int | None = None  # pre-train on the first N lines of train (smoke)
    valid_lines: int | None = None  # measure perplexity on the first N lines of valid (smoke)
    batch_size: int = 32
    steps: int = 2_000
    warmup: int = 200
    lr: float = 6e-4              # GPT-1: 2.5e-4 at batch 64 x 512; small models take larger rates
    weight_decay: float = 0.01
    clip: float | None = 1.0
    eval_tokens: int = 32_768     # validation tokens scored during training (disjoint windows, per token)
    eval_every: int = 500
    snapshots: tuple[int, ...] = ()

    presets: ClassVar = {
        "smoke": dict(d_model=64, n_layers=2, n_heads=2, d_ff=256, max_len=64, vocab_size=1_000, bpe_lines=4_000,
                      train_lines=4_000, valid_lines=400, batch_size=16, steps=300, warmup=30, lr=2e-3,
                      eval_tokens=8_192, eval_every=100, snapshots=(100,)),
        # cpu: 1.24 s a step of 32 x 128 tokens on two threads (measured), most of it the stack and the 8,000-way
        # softmax; 2,400 steps (~9.8M tokens, ~3.6 passes over WikiText-2) in about 50 minutes, once
        "cpu": dict(d_model=192, n_layers=4, n_heads=3, d_ff=768, steps=2_400, warmup=240, lr=1e-3, eval_every=400,
                    snapshots=(300, 800, 1_600)),
        # full: GPT-1's post-LN block at a width WikiText-2 can feed (GPT-1 itself, 12 x 768, would memorise it)
        "full": dict(d_model=512, n_layers=8, n_heads=8, d_ff=2_048, max_len=256, norm="post", vocab_size=16_000,
                     batch_size=32, steps=20_000, warmup=2_000, lr=2.5e-4, eval_tokens=262_144, eval_every=2_000,
                     snapshots=(1_000, 5_000, 10_000)),
    }

    def validate(self) -> None:
        if min(self.vocab_size, self.batch_size, self.steps, self.eval_tokens, self.eval_every) < 1:
            raise ConfigError("vocab_size, batch_size, steps, eval_tokens and eval_every must be positive")
        if self.vocab_size < 256 + len(SPECIALS):
            raise ConfigError(f"a byte-level BPE needs vocab_size >= {256 + len(SPECIALS)} (the 256 bytes and the "
                              f"specials {SPECIALS}), got {self.vocab_size}")
        if not 0 <= self.warmup < self.steps:
            raise ConfigError(f"need 0 <= warmup < steps, got warmup={self.warmup}, steps={self.steps}")
        check_snapshots(self.snapshots, self.steps)
        self.model_config(self.vocab_size).validate()

    def model_config(self, vocab_size: int) -> GPTConfig:
        """The architecture for a ``vocab_size`` vocabulary."""
        return GPTConfig(vocab_size=vocab_size, d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
                         d_ff=self.d_ff, max_len=self.max_len, norm=self.norm, activation=self.activation,
                         dropout=self.dropout, attn_dropout=self.dropout)



class ChunkBatches:
    """Re-iterable ``(x, y)`` batches, each ``(batch_size, T)``, over one token stream: every pass starts at a random
    offset in ``[0, T)``, cuts windows of ``T + 1`` tokens (consecutive windows share one token) and shuffles them;
    the last incomplete batch is dropped. All randomness is drawn in ``iter()`` (torch's global generator, which
    :func:`shoulders.train.fit` seeds per epoch)."""

    draws_at_iter = True

    def __init__(self, ids: torch.Tensor, T: int, batch_size: int):
        self.ids = torch.as_tensor(ids, dtype=torch.long).flatten()
        self.T, self.batch_size = int(T), int(batch_size)
        if self.ids.numel() < self.batch_size * self.T + self.T + 1:
            raise ValueError(f"a stream of {self.ids.numel()} tokens is too short for batches of {self.batch_size} "
                             f"windows of {self.T} tokens")

    def __len__(self) -> int:
        return (self.ids.numel() - self.T - 1) // self.T // self.batch_size

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        offset = int(torch.randint(0, self.T, ()))
        n = (self.ids.numel() - offset - 1) // self.T
        windows = self.ids[offset: offset + n * self.T + 1]
        starts = torch.randperm(n)[: len(self) * self.batch_size] * self.T  # (n_used,)
        cols = torch.arange(self.T + 1)  # (T + 1,)
        for b in range(0, starts.numel(), self.batch_size):
            chunk = windows[starts[b: b + self.batch_size, None] + cols]  # (B, T + 1)
            yield chunk[:, :-1], chunk[:, 1:]


def wikitext_lines_text(split: str, lines: int | None = None) -> tuple[str, int]:
    """A WikiText-2 split as the LM reads it -- each line :func:`~shoulders.text.gpt_inputs.lm_text` + ``"\\n"``
    -- and its number of words counted as the word-level chapters count them (every token plus one ``<eos>`` per
    line, empty lines included: 217,646 for ``valid``)."""
    rows = wikitext2(split, eos=None)[:lines]
    return "".join(lm_text(r) + "\n" for r in rows), sum(len(r) + 1 for r in rows)


@dataclasses.dataclass
class WikiTextForGPT:
    """WikiText-2 ready for pre-training: the BPE, the train and valid streams of ids, valid's word count."""

    tok: ByteLevelBPE
    train: torch.Tensor  # (N_train,)
    valid: torch.Tensor  # (N_valid + 1,): <|endoftext|> first, so every token of the text is predicted
    valid_words: int
    seconds: dict[str, float]  # "bpe" (learning the vocabulary, 0 when cached), "encode"


def wikitext_for_gpt(cfg: GPTPretrainingConfig, tok: ByteLevelBPE | None = None,
                     progress: bool = False) -> WikiTextForGPT:
    """WikiText-2 train / valid encoded with a byte-level BPE learned on train (``cfg.vocab_size`` entries, the
    first ``cfg.bpe_lines`` lines), kept as ``vocab.json`` + ``merges.txt`` under ``<data cache>/tokenizers/`` and
    learned only once per machine (two processes at once: the second waits and reads), unless ``tok`` is given."""
    seconds = {"bpe": 0.0}
    train_text, _ = wikitext_lines_text("train", cfg.train_lines)
    if tok is None:
        def learn() -> ByteLevelBPE:
            text = train_text if cfg.bpe_lines == cfg.train_lines else wikitext_lines_text("train", cfg.bpe_lines)[0]
            return ByteLevelBPE.train(text.splitlines(keepends=True), vocab_size=cfg.vocab_size,
                                      special_tokens=SPECIALS, progress=progress)

        tok, seconds["bpe"] = learned_once(f"bpe-wikitext2-{cfg.vocab_size}-{cfg.bpe_lines or 'all'}", "vocab.json",
                                           ByteLevelBPE.load, learn)
    t0 = time.perf_counter()
    valid_text, valid_words = wikitext_lines_text("valid", cfg.valid_lines)
    train = torch.tensor(tok.encode(train_text), dtype=torch.long)
    valid = torch.tensor([tok.token_to_id(SPECIALS[0]), *tok.encode(valid_text)], dtype=torch.long)
    seconds["encode"] = time.perf_counter() - t0
    return WikiTextForGPT(tok, train, valid, valid_words, seconds)


def perplexity_per_word(model: GPTLMHeadModel, ids: torch.Tensor, words: int, stride: int | None = None,
                        device: Any = None) -> dict[str, float]:
    """Perplexity of a text (``ids``: a separator, then the text) per BPE token and per word, with overlapping
    windows of the model's context (:func:`~shoulders.evaluate.perplexity.sliding_window_nll`)."""
    nll, n = sliding_window_nll(model, ids, model.cfg.max_len, stride, device=device)
    return {"ppl_token": math.exp(nll / n), "ppl_word": math.exp(nll / words), "tokens_per_word": n / words}


def _eval_windows(ids: torch.Tensor, T: int, tokens: int, batch_size: int = 32) -> list[tuple[torch.Tensor, ...]]:
    n = min(tokens, ids.numel() - 1) // T
    chunk = ids[: n * T + 1]
    x, y = chunk[:-1].view(n, T), chunk[1:].reshape(n, T)  # (n, T) each
    return [(x[i: i + batch_size], y[i: i + batch_size]) for i in range(0, n, batch_size)]


def build(cfg: GPTPretrainingConfig, tok: ByteLevelBPE) -> GPTLMHeadModel:
    """The untrained GPT for ``tok``'s vocabulary: what a cached giant's weights are loaded into."""
    return GPTLMHeadModel(cfg.model_config(len(tok)))


def train_giant(cfg: GPTPretrainingConfig, *, data: WikiTextForGPT | None = None, device: Any = None,
                progress: bool = True, **fit_kwargs: Any) -> Artefact:
    """Pre-train GPT on WikiText-2 train (``data``: the page's :func:`wikitext_for_gpt`, to encode it once).

    Every ``cfg.eval_every`` steps the history logs ``val_ppl_token`` on the first ``cfg.eval_tokens`` validation
    tokens (disjoint windows: a quick, pessimistic reading); at the end the whole validation text is scored with
    overlapping windows, per token and per word (the artefact's metrics). Copies of the weights after the steps of
    ``cfg.snapshots`` are kept (chapter 13's zero-shot curve reads them).
    """
    data = data if data is not None else wikitext_for_gpt(cfg, progress=progress)
    model = build(cfg, data.tok)
    quick = _eval_windows(data.valid, cfg.max_len, cfg.eval_tokens)

    def evaluate(m: GPTLMHeadModel) -> dict[str, float]:
        return {"val_ppl_token": perplexity(m, quick)}

    snapshots = Snapshots(cfg.snapshots)
    history = fit(model, ChunkBatches(data.train, cfg.max_len, cfg.batch_size),
                  adamw(model, lr=cfg.lr, weight_decay=cfg.weight_decay), steps=cfg.steps,
                  schedule=cosine_warmup(cfg.warmup, cfg.steps), clip=cfg.clip, evaluate=evaluate,
                  eval_every=cfg.eval_every, callbacks=[snapshots, *fit_kwargs.pop("callbacks", ())], device=device,
                  progress=progress, **fit_kwargs)
    model = model.cpu().eval()
    valid = perplexity_per_word(model, data.valid, data.valid_words)
    metrics = {"valid_ppl_word": valid["ppl_word"], "valid_ppl_token": valid["ppl_token"],
               "valid_tokens_per_word": valid["tokens_per_word"]}
    return Artefact(model=model, history=history, tokenizer=data.tok, metrics=metrics, snapshots=snapshots.states,
                    facts={"training tokens": data.train.numel(), "vocabulary": len(data.tok),
                           "bpe seconds": data.seconds["bpe"],
                           "windows": f"{cfg.max_len} tokens, shuffled, a random offset per pass"})



@dataclasses.dataclass
class CharGPTConfig(_WindowLMConfig):
    """A small character-level GPT on Tiny Shakespeare (Karpathy 2015): nanoGPT's "shakespeare_char" exercise, whose
    CPU setting (4 layers of 128, 4 heads, context 64, batch 12, 2,000 steps, no dropout) reaches a validation
    loss of about 1.88 nats per character; its GPU setting (6 x 384, context 256, batch 64, 5,000 steps, dropout
    0.2) about 1.47. The last 10% of the text is held out, as there."""

    vocab_size: int = 65      # Tiny Shakespeare's alphabet; train_char_gpt builds the model for its text's own
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    max_len: int = 64
    dropout: float = 0.0
    batch_size: int = 12
    steps: int = 2_000
    warmup: int = 100
    lr: float = 1e-3
    weight_decay: float = 0.1
    valid_fraction: float = 0.1

    presets: ClassVar = {
        "smoke": dict(steps=200, warmup=20),
        "cpu": dict(),
        "full": dict(d_model=384, n_layers=6, n_heads=6, max_len=256, dropout=0.2, batch_size=64, steps=5_000,
                     warmup=100),
    }

    def validate(self) -> None:
        if not 0.0 < self.valid_fraction < 1.0:
            raise ConfigError(f"valid_fraction must be in (0, 1), got {self.valid_fraction}")
        if not 0 <= self.warmup < self.steps:
            raise ConfigError(f"need 0 <= warmup < steps, got warmup={self.warmup}, steps={self.steps}")
        self.model_config(self.vocab_size).validate()

    def model_config(self, vocab_size: int) -> GPTConfig:
        return GPTConfig(vocab_size=vocab_size, d_model=self.d_model, n_layers=self.n_layers, n_heads=self.n_heads,
                         d_ff=4 * self.d_model, max_len=self.max_len, norm="pre", activation="gelu",
                         dropout=self.dropout, attn_dropout=self.dropout)


@dataclasses.dataclass
class CharGPT:
    """A trained character-level GPT with its alphabet (``chars[i]`` is id ``i``)."""

    model: GPTLMHeadModel
    chars: str
    history: Any
    valid_loss: float  # nats per character on the held-out tail, overlapping windows (>= max_len / 2 of context)
    valid_loss_windows: float  # the same over disjoint windows of max_len, each from scratch: nanoGPT's measure

    def encode(self, text: str) -> list[int]:
        index = {c: i for i, c in enumerate(self.chars)}
        unknown = sorted(set(text) - set(index))
        if unknown:
            raise KeyError(f"characters {unknown} are not in the model's alphabet of {len(self.chars)}")
        return [index[c] for c in text]

    def decode(self, ids: Sequence[int]) -> str:
        return "".join(self.chars[i] for i in ids)


def train_char_gpt(cfg: CharGPTConfig, text: str, *, device: Any = None, progress: bool = True,
                   **fit_kwargs: Any) -> CharGPT:
    """Train :class:`CharGPTConfig`'s model on ``text`` (the first ``1 - valid_fraction`` of it) and measure the
    held-out loss per character with overlapping windows."""
    chars = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    cut = int(len(ids) * (1 - cfg.valid_fraction))
    model = GPTLMHeadModel(cfg.model_config(len(chars)))
    history = fit(model, ChunkBatches(ids[:cut], cfg.max_len, cfg.batch_size),
                  adamw(model, lr=cfg.lr, weight_decay=cfg.weight_decay), steps=cfg.steps,
                  schedule=cosine_warmup(cfg.warmup, cfg.steps), clip=1.0, device=device, progress=progress,
                  **fit_kwargs)
    model = model.cpu().eval()
    nll, n = sliding_window_nll(model, ids[cut - 1:], cfg.max_len, batch_size=64)
    nll_cut, n_cut = sliding_window_nll(model, ids[cut - 1:], cfg.max_len, stride=cfg.max_len, batch_size=64)
    return CharGPT(model, chars, history, nll / n, nll_cut / n_cut)
