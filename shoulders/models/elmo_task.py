"""Adding ELMo (Peters et al. 2018, §3.3) or CoVe (McCann et al. 2017, §5) to a supervised model: the task encoder
chapters 9 and 10 compare with and without them.

The paper's recipe: take a task model that reads context-independent word vectors x_k (GloVe), run the frozen
biLM over the same sentence, and give the model's first recurrent layer the concatenation

    r_k = [x_k ; ELMo_k^task],      ELMo_k^task = gamma^task * sum_j s_j^task h_k,j        (§3.2 eq. 1, §3.3)

learning only s^task and gamma^task (a :class:`~shoulders.models.elmo.ScalarMix`) with the task. Some of the
paper's models also add a second, separately weighted mix at the output of that layer, [h_k ; ELMo_k^out] (SNLI,
SQuAD); ``output_mix=True`` does that. Dropout is applied to ELMo, as in the paper.

The task model here is one for every task of the chapter: a BiLSTM over r_k, its states ``hidden`` (B, T, 2H)
for tagging and, max-pooled over the words, ``pooled`` (B, 2H) for classification (InferSent's pooling, Conneau et
al. 2017) -- so :mod:`shoulders.heads`' classifiers and taggers work on it as on BERT. A sentence pair is one
sequence with a separator word between its sentences (``token_type_ids`` are not used). Without a biLM the same
model reads x_k alone: the control of every ELMo comparison.

Inputs are word ids in the task's vocabulary: ``word_vectors`` (V, d) holds their vectors and ``char_table``
(V, C) their characters (:func:`shoulders.text.word_chars.char_table`, with the padding word's row all zero), so
a word the biLM's softmax never saw still gets its ELMo vectors from its spelling.

**CoVe** (chapter 9) is the encoder of a translation model, the MT-LSTM, run over the same GloVe vectors:
``r_k = [x_k ; CoVe_k]`` with ``CoVe = MT-LSTM(GloVe(w))`` (McCann et al. 2017, eq. 6). The MT-LSTM reads the
task's own GloVe table (:meth:`~shoulders.models.seq2seq.MTLSTM.contextualise`), so no word needs to be in the
translation model's vocabulary; it is frozen and in eval mode, like the biLM, and runs on every batch -- or, with
``cove_cache``, once per sentence, like the biLM's layers below. ``cove_mean`` (chapter 9: the mean CoVe vector of
the task's training words) is subtracted from every CoVe vector.

The biLM is frozen and runs in eval mode, so a sentence's layers h_k,j never change while the task model trains:
with ``layer_cache`` (a dict, shared by every run of a comparison) each sentence's layers are computed once, on
the first batch that holds it, and kept on the CPU in float16 -- every later epoch, seed and evaluation reads
them back instead of running the biLM again. The paper's task models ran the biLM on every batch; the cache
gives the same vectors up to float16 rounding (a test checks it) and costs memory: (L + 1) x 2P x 2 bytes per
word of the task's text (1.5 KB at the ``cpu`` preset).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch
import torch.nn as nn

from .elmo import BiLM, ScalarMix
from .ids import check_ids
from .seq2seq import MTLSTM

__all__ = ["ContextualEncoder", "EncoderOutput", "sentence_cached"]


@dataclasses.dataclass
class EncoderOutput:
    """What :class:`ContextualEncoder` returns (the protocol of :mod:`shoulders.heads`)."""

    hidden: torch.Tensor  # (B, T, d_model): one vector per word (zero at padding)
    pooled: torch.Tensor  # (B, d_model): the max over the sentence's words


class ContextualEncoder(nn.Module):
    """Word vectors (+ ELMo, when ``bilm`` is given; + CoVe, when ``cove`` is) -> a BiLSTM of ``hidden`` units per
    direction.

    Args:
        word_vectors: (V, d) the task vocabulary's context-independent vectors, frozen unless ``train_words``.
        hidden: units per LSTM direction (d_model = 2 * hidden, or 2 * hidden + 2P with ``output_mix``).
        bilm: a pre-trained :class:`~shoulders.models.elmo.BiLM`; frozen here and always in eval mode.
        char_table: (V, C) the characters of every task word (needed with ``bilm``).
        layer_norm: normalise each biLM layer before mixing (ScalarMix's ``do_layer_norm``).
        output_mix: also concatenate a second mix to the BiLSTM's output (§3.3).
        dropout: on the word vectors, on ELMo and on the BiLSTM output.
        pad_id: the padding word's id (ignored where ``attention_mask`` is given).
        train_words: fine-tune the word vectors too.
        layer_cache: a dict to keep each sentence's biLM layers in (see the module's docstring); ``None``
            runs the biLM on every batch.
        cove: a trained translation model's encoder (:class:`~shoulders.models.seq2seq.MTLSTM`) whose inputs
            are vectors of ``word_vectors``' kind (its ``d_word`` = their d); frozen here and always in eval mode.
        cove_mean: (2h,) subtracted from every CoVe vector (chapter 9 centres CoVe on the task's training text,
            so that dropout on it drops signal rather than a constant offset).
        cove_cache: as ``layer_cache``, for each sentence's CoVe vectors.
    """

    def __init__(self, word_vectors: torch.Tensor, hidden: int, bilm: BiLM | None = None,
                 char_table: torch.Tensor | None = None, *, layer_norm: bool = False, output_mix: bool = False,
                 dropout: float = 0.5, pad_id: int = 0, train_words: bool = False,
                 layer_cache: dict[bytes, torch.Tensor] | None = None, cove: MTLSTM | None = None,
                 cove_mean: torch.Tensor | None = None, cove_cache: dict[bytes, torch.Tensor] | None = None):
        super().__init__()
        if word_vectors.dim() != 2:
            raise ValueError(f"word_vectors must be (V, d), got shape {tuple(word_vectors.shape)}")
        if bilm is not None and (char_table is None or char_table.shape[0] != word_vectors.shape[0]):
            raise ValueError("with a biLM, char_table must give the characters of every word of the vocabulary: "
                             f"(V={word_vectors.shape[0]}, C), got "
                             f"{None if char_table is None else tuple(char_table.shape)}")
        if bilm is None and (output_mix or layer_cache is not None):
            raise ValueError("output_mix and layer_cache need a biLM")
        if cove is None and (cove_mean is not None or cove_cache is not None):
            raise ValueError("cove_mean and cove_cache need an MT-LSTM (cove=)")
        if cove is not None and cove.lstm.input_size != word_vectors.shape[1]:
            raise ValueError(f"the MT-LSTM reads {cove.lstm.input_size}-d word vectors, but word_vectors are "
                             f"{word_vectors.shape[1]}-d: give it the GloVe vectors it was trained on")
        self.pad_id = pad_id
        self.words = nn.Embedding.from_pretrained(word_vectors.float().clone(), freeze=not train_words)
        self.bilm = bilm
        self.layer_cache = layer_cache
        d_in, elmo_dim = word_vectors.shape[1], 0
        if bilm is not None:
            bilm.requires_grad_(False)
            bilm.eval()
            self.register_buffer("char_table", char_table.long().clone(), persistent=False)
            n_layers, elmo_dim = bilm.cfg.n_layers + 1, bilm.cfg.output_dim
            self.mix = ScalarMix(n_layers, do_layer_norm=layer_norm)
            self.mix_out = ScalarMix(n_layers, do_layer_norm=layer_norm) if output_mix else None
            d_in += elmo_dim
        self.cove, self.cove_cache = cove, cove_cache
        self.register_buffer("cove_mean", None if cove_mean is None else cove_mean.float().clone(), persistent=False)
        if cove is not None:
            if cove_mean is not None and cove_mean.shape != (2 * cove.hidden,):
                raise ValueError(f"cove_mean must be ({2 * cove.hidden},), got shape {tuple(cove_mean.shape)}")
            cove.requires_grad_(False)
            cove.eval()
            d_in += 2 * cove.hidden
        self.drop = nn.Dropout(dropout)
        self.lstm = nn.LSTM(d_in, hidden, batch_first=True, bidirectional=True)
        self.d_model = 2 * hidden + (elmo_dim if output_mix else 0)

    def train(self, mode: bool = True) -> "ContextualEncoder":
        super().train(mode)
        if self.bilm is not None:
            self.bilm.eval()  # frozen: no dropout inside the biLM, its layers are fixed features
        if self.cove is not None:
            self.cove.eval()  # frozen too: CoVe is a fixed function of the sentence
        return self

    def mix_logs(self) -> dict[str, float]:
        """The mixes' weights softmax(s)_j and gamma by name (``mix_w0`` ..., ``mix_gamma``; ``mix_out_...`` for
        the output mix): what :class:`shoulders.train.Probe` logs and :func:`shoulders.viz.layer_mix` draws."""
        logs: dict[str, float] = {}
        for name, mix in (("mix", getattr(self, "mix", None)), ("mix_out", getattr(self, "mix_out", None))):
            if mix is not None:
                w, gamma = mix.weights()
                logs.update({f"{name}_w{j}": float(v) for j, v in enumerate(w)}, **{f"{name}_gamma": gamma})
        return logs

    @torch.no_grad()
    def elmo_layers(self, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The frozen biLM's layers for a batch of words: input_ids, mask (B, T) -> (L + 1, B, T, 2P), zero at
        padding; read from ``layer_cache`` where a sentence is already there (its words first, padding after)."""
        if self.bilm is None:
            raise ValueError("this encoder has no biLM")

        def run(ids: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
            chars = self.char_table[ids] * m.unsqueeze(-1)  # (b, T, C): all-zero rows at padding
            return self.bilm.layers(chars, m)  # (L+1, b, T, 2P)

        return sentence_cached(run, input_ids, mask, self.layer_cache)

    @torch.no_grad()
    def cove_vectors(self, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """CoVe for a batch of words: input_ids, mask (B, T) -> (B, T, 2h), the MT-LSTM over the words' vectors
        (zero at padding) less ``cove_mean``; read from ``cove_cache`` where a sentence is already there."""
        if self.cove is None:
            raise ValueError("this encoder has no MT-LSTM")
        cove = self.cove

        def run(ids: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
            return cove.contextualise(self.words(ids), m.sum(1))[0][None]  # (1, b, T, 2h): one "layer"

        H = sentence_cached(run, input_ids, mask, self.cove_cache)[0]  # (B, T, 2h), zero at padding
        if self.cove_mean is not None:
            H = (H - self.cove_mean) * mask.unsqueeze(-1).to(H.dtype)
        return H

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None) -> EncoderOutput:
        check_ids(input_ids, "input_ids", self.words.num_embeddings, dims=2)  # (B, T)
        mask = (input_ids != self.pad_id) if attention_mask is None else attention_mask.bool()  # (B, T)
        lengths = mask.sum(1)
        if bool((lengths == 0).any()):
            raise ValueError("every row needs at least one word (a row of padding only has nothing to encode)")
        x = self.drop(self.words(input_ids))  # (B, T, d)
        if self.cove is not None:
            cove = self.cove_vectors(input_ids, mask)  # (B, T, 2h): CoVe = MT-LSTM(GloVe(w)), fixed features
            x = torch.cat([x, self.drop(cove)], -1)  # r_k = [x_k ; CoVe_k]
        elmo = None
        if self.bilm is not None:
            layers = self.elmo_layers(input_ids, mask)  # (L+1, B, T, 2P), fixed features
            x = torch.cat([x, self.drop(self.mix(layers, mask))], -1)  # r_k = [x_k ; ELMo_k]
            elmo = layers
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        h, _ = self.lstm(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=x.shape[1])  # (B, T, 2H)
        if self.bilm is not None and self.mix_out is not None:
            h = torch.cat([h, self.mix_out(elmo, mask)], -1)  # [h_k ; ELMo_k^out]
        h = self.drop(h) * mask.unsqueeze(-1).to(h.dtype)
        pooled = h.masked_fill(~mask.unsqueeze(-1), torch.finfo(h.dtype).min).amax(1)  # (B, d_model)
        return EncoderOutput(hidden=h, pooled=pooled)


def sentence_cached(run: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], input_ids: torch.Tensor,
                    mask: torch.Tensor, cache: dict[bytes, torch.Tensor] | None) -> torch.Tensor:
    """``run(ids, mask) -> (K, b, T, d)`` for a batch, each sentence computed once: ``cache`` (keyed by the
    sentence's ids) keeps every new sentence's ``(K, n_words, d)`` in float16 on the CPU, and later batches read it
    back. ``None``: no cache, ``run`` on the whole batch. Rows must hold their words first, padding after."""
    if cache is None:
        return run(input_ids, mask)
    B, T = input_ids.shape
    lengths = mask.sum(1)  # (B,)
    if not torch.equal(mask.bool(), torch.arange(T, device=mask.device) < lengths[:, None]):
        raise ValueError("a sentence cache needs every row's words first and its padding after them")
    keys = [row[:n].cpu().numpy().tobytes() for row, n in zip(input_ids, lengths.tolist())]
    new: dict[bytes, int] = {}
    for b, k in enumerate(keys):
        if k not in cache and k not in new:
            new[k] = b
    if new:
        rows = torch.tensor(list(new.values()), device=input_ids.device)
        n = int(lengths[rows].max())
        fresh = run(input_ids[rows, :n], mask[rows, :n])  # (K, b, n, d)
        for i, (k, b) in enumerate(new.items()):
            cache[k] = fresh[:, i, :int(lengths[b])].to("cpu", torch.float16)  # (K, n_b, d)
    first = cache[keys[0]]
    out = torch.zeros(first.shape[0], B, T, first.shape[2], device=input_ids.device)  # (K, B, T, d)
    for b, k in enumerate(keys):
        h = cache[k]
        out[:, b, :h.shape[1]] = h.to(out.device, out.dtype)
    return out
