"""CoVe's attentional LSTM translation model (shoulders.models.seq2seq): the MT-LSTM's states (padding-proof, final
states of both directions per layer), the attention ignoring padding, step-by-step decoding with the recurrent cache
equal to decoding the whole prefix, chapter 12's search working on it, and learning to copy."""
from __future__ import annotations

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.models.seq2seq import MTLSTM, Seq2SeqConfig
from shoulders.models.transformer_decode import beam_search, greedy_decode


def _cfg(**kw):
    base = dict(src_vocab=20, tgt_vocab=20, d_word=8, d_tgt=8, hidden=6, layers=2, dropout=0.0, max_len=16,
                max_extra_len=4, batch_size=8)
    return Seq2SeqConfig(**{**base, **kw})


def test_mt_lstm_states_ignore_padding_and_stack_both_directions(one_thread):
    torch.manual_seed(0)
    enc = MTLSTM(20, 5, 4, layers=2).eval()
    src = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]])
    H, (h, c) = enc(src)
    H1, (h1, _) = enc(src[:1, :3])
    torch.testing.assert_close(H[:1, :3], H1)
    assert torch.equal(H[0, 3:], torch.zeros(2, 8))  # padded positions are zero
    torch.testing.assert_close(h[:, :1], h1)
    _, (h_n, _) = enc.lstm(enc.words(src[1:]))  # the last sentence has no padding: the plain LSTM's final states
    torch.testing.assert_close(h[:, 1], torch.cat([h_n[0::2, 0], h_n[1::2, 0]], -1))  # layer l: [fwd_l ; bwd_l]
    assert h.shape == c.shape == (2, 2, 8) and not enc.words.weight.requires_grad  # GloVe frozen by default


def test_attention_gives_padding_no_weight(one_thread):
    torch.manual_seed(0)
    model = _cfg().build().eval()
    src = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]])
    _, alpha = model.decode(torch.tensor([[2, 5], [2, 6]]), model.encode(src))
    assert alpha.shape == (2, 2, 5) and torch.equal(alpha[0, :, 3:], torch.zeros(2, 2))
    torch.testing.assert_close(alpha.sum(-1), torch.ones(2, 2))


def test_decoding_with_the_cache_equals_the_whole_prefix(one_thread):
    torch.manual_seed(0)
    model = _cfg().build().eval()
    src = torch.tensor([[5, 6, 7, 0], [8, 9, 10, 11]])
    tgt = torch.tensor([[2, 9, 4, 13], [2, 5, 5, 6]])
    enc = model.encode(src)
    whole = model.decode(tgt, enc)[0]
    cache = model.new_cache()
    steps = torch.cat([model.decode(tgt[:, t:t + 1], enc, cache)[0] for t in range(tgt.shape[1])], 1)
    torch.testing.assert_close(steps, whole)
    assert greedy_decode(model, src, use_cache=True) == greedy_decode(model, src, use_cache=False)
    assert beam_search(model, src, beam_size=1, alpha=0.0) == greedy_decode(model, src)


def test_learns_to_copy_and_searches_it(one_thread):
    torch.manual_seed(0)
    cfg = _cfg(hidden=24, d_word=16, d_tgt=16)
    model = cfg.build()
    model.encoder.words.weight.requires_grad_(True)  # no GloVe here: the source words are learned too
    g = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(300):
        src = torch.randint(4, 20, (32, 5), generator=g)
        tgt = torch.cat([torch.full((32, 1), cfg.bos_id), src, torch.full((32, 1), cfg.eos_id)], 1)
        opt.zero_grad()
        loss = model(src, tgt[:, :-1], tgt[:, 1:])["loss"]
        loss.backward()
        opt.step()
    test = torch.randint(4, 20, (16, 5), generator=torch.Generator().manual_seed(1))
    out = beam_search(model, test, beam_size=3)
    assert sum(o == s for o, s in zip(out, test.tolist())) >= 12, (out, test.tolist())


def test_config_errors():
    with pytest.raises(ConfigError, match="distinct"):
        _cfg(bos_id=0)
    with pytest.raises(ConfigError, match="sizes"):
        _cfg(hidden=0)
