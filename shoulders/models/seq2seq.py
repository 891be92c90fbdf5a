"""The attentional LSTM translation model of CoVe (McCann, Bradbury, Xiong & Socher 2017, "Learned in Translation:
Contextualized Word Vectors", §3), whose encoder becomes a contextual word vector.

**Encoder: the MT-LSTM.** A two-layer bidirectional LSTM reads the source words' GloVe vectors (Pennington et
al. 2014): ``H = MT-LSTM(GloVe(w^x))`` ``(B, S, 2h)``. After translation training, CoVe(w) = MT-LSTM(GloVe(w)) --
the encoder's top-layer states, frozen -- is what chapter 9 feeds to other tasks beside GloVe.

**Decoder** (§3, the attention of Luong, Pham & Manning 2015 with input feeding). A two-layer unidirectional LSTM
reads the previous target word's embedding z_{t-1} and the previous *context-adjusted* state h~_{t-1}:

    h_t^dec = LSTM([z_{t-1}; h~_{t-1}], h_{t-1}^dec)
    alpha_t = softmax(H (W_1 h_t^dec + b_1))                               (attention over the source words)
    h~_t    = tanh(W_2 [H^T alpha_t ; h_t^dec] + b_2)
    p(w_t | X, w_1..w_{t-1}) = softmax(W_out h~_t + b_out)

The decoder's LSTM has 2h units, so it starts from the encoder's final states, the two directions of each layer
concatenated (as OpenNMT bridges a bidirectional encoder). Padding of the source is masked out of the attention.

Decoding reuses chapter 12's greedy and beam search (:mod:`shoulders.models.transformer_decode`): the model offers
the same ``encode`` / ``decode`` / ``new_cache`` protocol, with :class:`RecurrentCache` -- the LSTM state and
h~ of the last step -- in place of the Transformer's key/value cache.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..config import Config, ConfigError
from .ids import check_ids, check_labels
from .transformer import translation_batch

__all__ = ["CORPORA", "MTLSTM", "RecurrentCache", "Seq2Seq", "Seq2SeqConfig", "SourceStates"]

CORPORA = ("multi30k", "tatoeba")  # English -> German image captions; English -> French everyday sentences


class MTLSTM(nn.Module):
    """Word vectors (``d_word``; GloVe's, frozen by default) -> two-layer BiLSTM of ``hidden`` units per direction.

    ``forward(src (B, S)) -> (H (B, S, 2 hidden), (h_n, c_n))`` with the final states ``(2 layers, B, 2 hidden)``:
    each layer's forward and backward states concatenated. ``H`` at padded positions is zero."""

    def __init__(self, vocab_size: int, d_word: int, hidden: int, layers: int = 2, pad_id: int = 0,
                 dropout: float = 0.0, freeze_words: bool = True):
        super().__init__()
        self.pad_id, self.hidden, self.layers = pad_id, hidden, layers
        self.words = nn.Embedding(vocab_size, d_word, padding_idx=pad_id)
        self.words.weight.requires_grad_(not freeze_words)
        self.lstm = nn.LSTM(d_word, hidden, num_layers=layers, batch_first=True, bidirectional=True,
                            dropout=dropout if layers > 1 else 0.0)

    def forward(self, src: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        check_ids(src, "src", self.words.num_embeddings)
        return self.contextualise(self.words(src), (src != self.pad_id).sum(1))

    def contextualise(self, x: torch.Tensor, lengths: torch.Tensor,
                      ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """The BiLSTM over given word vectors: ``x`` (B, S, d_word) -- GloVe(w) for the sentence's words, padding
        after them -- and ``lengths`` (B,) -> ``(H, (h_n, c_n))`` as :meth:`forward`. CoVe on a task's own
        vocabulary (chapter 9) feeds the task's GloVe table here, without the MT source vocabulary."""
        if x.dim() != 3 or x.shape[-1] != self.lstm.input_size:
            raise ValueError(f"x must be (B, S, {self.lstm.input_size}), got shape {tuple(x.shape)}")
        if bool((lengths == 0).any()):
            raise ValueError("every source sentence needs at least one word")
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, c_n) = self.lstm(packed)
        H, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # (B, S, 2h)

        def both(x: torch.Tensor) -> torch.Tensor:  # (2L, B, h) -> (L, B, 2h): [forward ; backward] per layer
            return x.view(self.layers, 2, *x.shape[1:]).transpose(1, 2).flatten(2).contiguous()

        return H, (both(h_n), both(c_n))


@dataclasses.dataclass
class SourceStates:
    """The encoder's output for a batch, what every decoding step reads (beam search selects rows of it)."""

    H: torch.Tensor                                  # (B, S, 2h)
    keep: torch.Tensor                               # (B, S) True at real source words
    state: tuple[torch.Tensor, torch.Tensor]         # the decoder's start: (layers, B, 2h) twice

    def index_select(self, index: torch.Tensor) -> SourceStates:
        return SourceStates(self.H.index_select(0, index), self.keep.index_select(0, index),
                            tuple(s.index_select(1, index) for s in self.state))  # type: ignore[arg-type]


class RecurrentCache:
    """What a decoding step leaves for the next: the LSTM state and h~ (input feeding); ``reorder`` follows the
    beams (the :class:`~shoulders.models.attention.KVCache` protocol of chapter 12's search)."""

    def __init__(self) -> None:
        self.state: tuple[torch.Tensor, torch.Tensor] | None = None
        self.feed: torch.Tensor | None = None  # (B, 2h): h~ of the last step

    def reorder(self, index: torch.Tensor) -> None:
        if self.state is not None and self.feed is not None:
            self.state = tuple(s.index_select(1, index) for s in self.state)  # type: ignore[assignment]
            self.feed = self.feed.index_select(0, index)


class Seq2Seq(nn.Module):
    """The MT-LSTM encoder and the attentional decoder. ``forward(src, tgt_in, tgt_out)`` is the training loss
    ``{"loss", "tokens"}`` (cross-entropy per target token, padding ignored); ``encode`` / ``decode`` /
    ``new_cache`` are what :func:`~shoulders.models.transformer_decode.greedy_decode` and ``beam_search`` call."""

    def __init__(self, cfg: Seq2SeqConfig):
        super().__init__()
        self.cfg = cfg
        d = 2 * cfg.hidden  # the decoder's width: the encoder's two directions
        self.encoder = MTLSTM(cfg.src_vocab, cfg.d_word, cfg.hidden, cfg.layers, cfg.pad_id, cfg.dropout,
                              cfg.freeze_words)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab, cfg.d_tgt, padding_idx=cfg.pad_id)
        self.decoder = nn.LSTM(cfg.d_tgt + d, d, num_layers=cfg.layers, batch_first=True,
                               dropout=cfg.dropout if cfg.layers > 1 else 0.0)
        self.W1 = nn.Linear(d, d)          # alpha_t = softmax(H (W_1 h_t + b_1))
        self.W2 = nn.Linear(2 * d, d)      # h~_t = tanh(W_2 [H^T alpha_t ; h_t] + b_2)
        self.out = nn.Linear(d, cfg.tgt_vocab)
        self.drop = nn.Dropout(cfg.dropout)

    def new_cache(self) -> RecurrentCache:
        return RecurrentCache()

    def encode(self, src: torch.Tensor) -> SourceStates:
        H, state = self.encoder(src)
        return SourceStates(self.drop(H), src != self.cfg.pad_id, state)

    def attend(self, h: torch.Tensor, enc: SourceStates) -> tuple[torch.Tensor, torch.Tensor]:
        """One step's attention: ``h`` (B, 2h) -> h~ (B, 2h) and alpha (B, S)."""
        scores = torch.einsum("bsd,bd->bs", enc.H, self.W1(h)).masked_fill(~enc.keep, float("-inf"))  # (B, S)
        alpha = scores.softmax(-1)
        context = torch.einsum("bs,bsd->bd", alpha, enc.H)  # H^T alpha_t: (B, 2h)
        return torch.tanh(self.W2(torch.cat([context, h], -1))), alpha

    def decode(self, tgt_in: torch.Tensor, enc: SourceStates, cache: RecurrentCache | None = None,
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """``tgt_in`` (B, T) -> logits (B, T, |V|) and the attention (B, T, S). With a ``cache`` that has run
        before, ``tgt_in`` holds only the new tokens and the steps continue from the cached state."""
        check_ids(tgt_in, "tgt_in", self.cfg.tgt_vocab)
        B = tgt_in.shape[0]
        if cache is not None and cache.state is not None:
            state, feed = cache.state, cache.feed
        else:
            state, feed = enc.state, enc.H.new_zeros(B, enc.H.shape[-1])
        z = self.drop(self.tgt_embed(tgt_in))  # (B, T, d_tgt)
        outs, alphas = [], []
        for t in range(tgt_in.shape[1]):  # input feeding: step t reads h~_{t-1}, so the steps run one by one
            h, state = self.decoder(torch.cat([z[:, t], feed], -1)[:, None], state)  # (B, 1, 2h)
            feed, alpha = self.attend(h[:, 0], enc)
            outs.append(feed)
            alphas.append(alpha)
        if cache is not None:
            cache.state, cache.feed = state, feed
        return self.out(self.drop(torch.stack(outs, 1))), torch.stack(alphas, 1)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor | None = None) -> Any:
        logits = self.decode(tgt_in, self.encode(src))[0]  # (B, T, |V|)
        if tgt_out is None:
            return logits
        if tgt_out.shape != tgt_in.shape:
            raise ValueError(f"tgt_out {tuple(tgt_out.shape)} must have the shape of tgt_in {tuple(tgt_in.shape)}")
        check_labels(tgt_out, "tgt_out", self.cfg.tgt_vocab, ignore_index=self.cfg.pad_id)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=self.cfg.pad_id)
        return {"loss": loss, "tokens": (tgt_out != self.cfg.pad_id).sum()}

    @torch.no_grad()
    def cove(self, src: torch.Tensor) -> torch.Tensor:
        """CoVe(w) = MT-LSTM(GloVe(w)): the encoder's top-layer states ``(B, S, 2h)`` (no dropout, no gradient)."""
        was = self.encoder.training
        self.encoder.eval()
        try:
            return self.encoder(src)[0]
        finally:
            self.encoder.train(was)


@dataclasses.dataclass
class Seq2SeqConfig(Config):
    """CoVe's translation model and its training (the paper: 300-d GloVe inputs, a two-layer BiLSTM of 300 units
    per direction -- CoVe is 600-d --, a two-layer decoder, trained on WMT'16 Multi30k (MT-Small), IWSLT'16
    (MT-Medium) or WMT'17 (MT-Large) English-German). ``d_word`` must be the GloVe giant's dimension at the same
    scale (the recipe checks); the vocabularies are built from the training text, at most ``src_vocab`` and
    ``tgt_vocab`` words."""

    src_vocab: int = 20_000
    tgt_vocab: int = 20_000
    d_word: int = 300          # GloVe's dimension
    d_tgt: int = 300           # the target word embeddings
    hidden: int = 300          # per direction: CoVe is 2 x hidden
    layers: int = 2
    dropout: float = 0.2
    freeze_words: bool = True  # GloVe stays fixed, as in the paper
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3
    max_len: int = 256         # longest output the search may produce (+1 for <bos>)
    max_extra_len: int = 50    # the search stops after source length + this many tokens
    beam_size: int = 4
    length_penalty: float = 0.6
    batch_size: int = 64
    lr: float = 1e-3           # Adam's peak rate (linear warm-up over ``warmup_frac`` of the steps, then decay)
    warmup_frac: float = 0.05
    clip: float = 5.0
    steps: int = 20_000
    seed: int = 0
    # the data (chapter 9's recipe, shoulders.recipes.cove)
    corpus: str = "multi30k"   # "multi30k" (English -> German, MT-Small's data) or "tatoeba" (English -> French)
    train_pairs: int | None = None  # the first this many training pairs (None: all)
    min_freq: int = 2          # vocabularies: words seen at least this often in the training pairs
    max_words: int = 50        # longer training sentences (either side) are left out
    eval_pairs: int = 1_000    # held-out sentences translated for the test BLEU
    eval_every: int = 1_000    # validation loss and BLEU (200 sentences) every this many updates

    presets: ClassVar = {
        # smoke: GloVe's smoke vectors are 50-d; a tenth of Multi30k, a minute on two cores
        "smoke": dict(src_vocab=3_000, tgt_vocab=3_000, d_word=50, d_tgt=64, hidden=64, steps=600, batch_size=32,
                      lr=3e-3, train_pairs=10_000, eval_pairs=200, eval_every=300),
        # cpu: 0.27 s a step of 64 pairs on two cores (2026-12-03): 4,000 steps are 8.8 passes over Multi30k
        "cpu": dict(src_vocab=10_000, tgt_vocab=10_000, d_word=100, d_tgt=128, hidden=150, steps=4_000),
        "full": dict(),
    }

    def validate(self) -> None:
        sizes = dict(src_vocab=self.src_vocab, tgt_vocab=self.tgt_vocab, d_word=self.d_word, d_tgt=self.d_tgt,
                     hidden=self.hidden, layers=self.layers, max_len=self.max_len, beam_size=self.beam_size,
                     batch_size=self.batch_size, steps=self.steps)
        if any(v < 1 for v in sizes.values()):
            raise ConfigError(f"sizes must be positive, got {sizes}")
        ids = (self.pad_id, self.bos_id, self.eos_id)
        if len(set(ids)) != 3 or not all(0 <= i < min(self.src_vocab, self.tgt_vocab) for i in ids):
            raise ConfigError(f"pad_id, bos_id and eos_id must be distinct ids of both vocabularies, got {ids}")
        if not 0.0 <= self.dropout < 1.0 or self.lr <= 0:
            raise ConfigError(f"need 0 <= dropout < 1 and lr > 0, got {self.dropout}, {self.lr}")
        if self.corpus not in CORPORA:
            raise ConfigError(f"corpus must be one of {CORPORA}, got {self.corpus!r}")
        if not 0.0 <= self.warmup_frac < 1.0 or self.clip <= 0:
            raise ConfigError(f"need 0 <= warmup_frac < 1 and clip > 0, got {self.warmup_frac}, {self.clip}")
        if (self.train_pairs is not None and self.train_pairs < 1) or min(self.min_freq, self.max_words,
                                                                          self.eval_pairs, self.eval_every) < 1:
            raise ConfigError("train_pairs (or None), min_freq, max_words, eval_pairs and eval_every must be positive")

    def build(self) -> Seq2Seq:
        return Seq2Seq(self)

    def collate(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> tuple[torch.Tensor, ...]:
        """``(source ids, target ids)`` pairs -> one ``(src, tgt_in, tgt_out)`` batch (chapter 12's
        :func:`~shoulders.models.transformer.translation_batch`)."""
        return translation_batch([p[0] for p in pairs], [p[1] for p in pairs], self.pad_id, self.bos_id,
                                 self.eos_id)

    def example_batch(self, batch_size: int = 3) -> tuple[torch.Tensor, ...]:
        return self._batch(batch_size, 7, 8)

    def step_batch(self) -> tuple[torch.Tensor, ...]:
        """One step's shapes: ``batch_size`` pairs with Multi30k's padded lengths (as chapter 12's Transformer)."""
        return self._batch(self.batch_size, 13, 18)

    def _batch(self, B: int, S: int, T: int) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(0)
        src = torch.randint(4, self.src_vocab, (B, S), generator=g)
        tgt = torch.randint(4, self.tgt_vocab, (B, T + 1), generator=g)
        return src, tgt[:, :-1], tgt[:, 1:]
