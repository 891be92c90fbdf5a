"""BERT's pre-training data: the 15% / 80-10-10 masking and the 50/50 next-sentence pairs, measured on large
samples (Devlin et al. 2019, §3.1 and Appendix A.1)."""
from __future__ import annotations

import math
import random

import pytest
import torch

from shoulders.data import mirror_folder, wikitext_detokenize, wikitext_documents
from shoulders.models.bert import BertForPreTraining
from shoulders.recipes.bert import BertPretrainingConfig, PretrainingBatches, evaluate_pretraining
from shoulders.text.bert_inputs import IGNORE, collate, pack
from shoulders.text.masking import mask_tokens
from shoulders.text.nsp_pairs import IS_NEXT, NOT_NEXT, nsp_pairs
from shoulders.text.wordpiece import WordPiece

MASK, V, SPECIALS = 4, 1000, 5


def _within(observed: float, p: float, n: int, sigmas: float = 5.0) -> bool:
    """``observed`` is within ``sigmas`` binomial standard deviations of ``p`` for ``n`` trials."""
    return abs(observed - p) <= sigmas * math.sqrt(p * (1 - p) / n)


@pytest.fixture(scope="module")
def masked():
    g = torch.Generator().manual_seed(0)
    B, T = 2_000, 100
    ids = torch.randint(SPECIALS, V, (B, T), generator=g)
    lengths = torch.randint(10, T + 1, (B,), generator=g)
    maskable = torch.arange(T)[None, :] < lengths[:, None]  # (B, T)
    ids[~maskable] = 0
    out, labels = mask_tokens(ids, maskable, MASK, V, first_random_id=SPECIALS, generator=g)
    return ids, maskable, out, labels


def test_exactly_15_percent_of_each_sequence_is_chosen(masked):
    ids, maskable, out, labels = masked
    chosen = labels != IGNORE
    n = maskable.sum(1)
    expected = torch.clamp(torch.round(n * 0.15), min=1)
    assert torch.equal(chosen.sum(1), expected)
    assert not (chosen & ~maskable).any(), "padding / special positions must never be chosen"
    assert torch.equal(labels[chosen], ids[chosen]), "labels must be the original tokens"


def test_80_10_10_replacement(masked):
    ids, maskable, out, labels = masked
    chosen = labels != IGNORE
    n = int(chosen.sum())
    is_mask = (out == MASK) & chosen
    same = (out == ids) & chosen
    other = chosen & ~is_mask & ~same
    # a random replacement equals the original with probability 1/(V - SPECIALS): count those as "random" too
    p_same = 0.1 + 0.1 / (V - SPECIALS)
    assert _within(float(is_mask.sum()) / n, 0.8, n)
    assert _within(float(same.sum()) / n, p_same, n)
    assert _within(float(other.sum()) / n, 0.1 - 0.1 / (V - SPECIALS), n)
    assert torch.equal(out[~chosen], ids[~chosen]), "unchosen tokens must be left alone"
    assert int(out[other].min()) >= SPECIALS, "random replacements must not be special tokens"


def test_random_replacements_are_uniform(masked):
    ids, maskable, out, labels = masked
    other = (labels != IGNORE) & (out != MASK) & (out != ids)
    counts = torch.bincount(out[other], minlength=V)[SPECIALS:].float()
    # a chi-square statistic far below a skewed generator's: mean (V - SPECIALS - 1), sd ~ sqrt(2 (V - SPECIALS))
    expected = counts.sum() / counts.numel()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < (V - SPECIALS) + 6 * math.sqrt(2 * (V - SPECIALS))


def test_mask_tokens_rejects_bad_input():
    ids = torch.zeros(2, 5, dtype=torch.long)
    with pytest.raises(ValueError, match="shape"):
        mask_tokens(ids, torch.ones(2, 4, dtype=torch.bool), MASK, V)
    with pytest.raises(ValueError, match="mask_prob"):
        mask_tokens(ids, torch.ones(2, 5, dtype=torch.bool), MASK, V, mask_prob=1.5)


@pytest.fixture(scope="module")
def documents():
    if mirror_folder("wikitext-2") is None:
        pytest.skip("no WikiText-2 in the offline mirror: set SHOULDERS_DATA_MIRROR to the book's shared/data folder")
    docs = wikitext_documents("train", root=mirror_folder("wikitext-2"))
    return [[s.split() for s in d] for d in docs]


def test_wikitext_documents_are_articles_of_sentences(documents):
    assert 580 <= len(documents) <= 700  # ~600 articles; the heading heuristic finds 629
    assert all(d and all(s for s in d) for d in documents)
    words = sum(len(s) for d in documents for s in d)
    assert 1_900_000 < words < 2_100_000  # the 2.05M-word train split minus headings
    assert wikitext_detokenize("3 @,@ 000 <unk> high @-@ speed") == "3,000 [UNK] high-speed"


def test_nsp_pairs_half_are_next_and_are_contiguous(documents):
    pairs = nsp_pairs(documents, 128, rng=random.Random(0))
    n = len(pairs)
    assert n > 15_000
    share = sum(p.label == IS_NEXT for p in pairs) / n
    assert _within(share, 0.5, n), f"IsNext share {share:.3f} over {n} pairs"
    text = {d: " ".join(t for s in doc for t in s) for d, doc in enumerate(documents)}
    whole = " \n ".join(text.values())
    rng = random.Random(1)
    for p in rng.sample(pairs, 300):
        joined = " ".join(p.a + p.b)
        if p.label == IS_NEXT:
            assert joined in whole, "IsNext: B must continue A in the same document"
        else:
            assert " ".join(p.a) in whole and " ".join(p.b) in whole


def test_nsp_not_next_comes_from_another_document():
    docs = [[[d * 100 + i, d * 100 + i] for i in range(6)] for d in range(5)]  # tokens name their document
    pairs = nsp_pairs(docs, 8, rng=random.Random(0))
    for p in pairs:
        same_doc = {t // 100 for t in p.a} == {t // 100 for t in p.b}
        assert same_doc == (p.label == IS_NEXT)
    assert {p.label for p in pairs} == {IS_NEXT, NOT_NEXT}


def test_packed_pairs_fit_and_carry_segments(documents):
    index: dict[str, int] = {}
    docs = [[[index.setdefault(t, len(index) + 5) for t in s] for s in d] for d in documents[:50]]  # words -> ids
    pairs = nsp_pairs(docs, 64, rng=random.Random(0))
    feats = []
    for p in pairs:
        ids, seg = pack(p.a, p.b, 2, 3, 64)
        assert len(ids) <= 64 and ids[0] == 2 and ids[-1] == 3 and ids.count(3) == 2
        assert seg == [0] * (ids.index(3) + 1) + [1] * (len(ids) - ids.index(3) - 1)
        feats.append({"input_ids": ids, "token_type_ids": seg})
    b = collate(feats[:8], 0)
    assert b["input_ids"].shape == b["token_type_ids"].shape == b["attention_mask"].shape


def test_nsp_pairs_needs_two_documents():
    with pytest.raises(ValueError, match="two documents"):
        nsp_pairs([[[1, 2], [3, 4]]], 16)


def _as_ids(documents):
    """``documents`` of words as ids after the specials, and a WordPiece whose pieces are those words."""
    index: dict[str, int] = {}
    docs = [[[index.setdefault(t, len(index) + len(WordPiece.SPECIALS)) for t in s] for s in d] for d in documents]
    return docs, WordPiece(WordPiece.SPECIALS + tuple(f"w{i}" for i in range(len(index))))


def test_the_long_phase_packs_longer_pairs_in_its_own_batches_from_its_first_pass(documents):
    """The paper's two phases (Appendix A.2): passes before ``long_from`` pack ``max_len`` pieces in batches of
    ``batch_size``, later passes ``long_len`` in ``long_batch_size``; ``long_phase_start`` leaves about
    ``1 - long_frac`` of the steps to the short phase, in whole passes."""
    docs, tok = _as_ids(documents[:60])
    cfg = BertPretrainingConfig.preset("smoke", max_len=32, batch_size=8, long_len=64, long_batch_size=4,
                                       long_frac=0.25, steps=3_000, warmup=10)
    data = PretrainingBatches(docs, tok, cfg, steps=cfg.steps)
    per_pass = len(data.pairs(random.Random(0), 32)) // 8
    start = data.long_phase_start(cfg.steps)
    assert start == math.ceil(0.75 * 3_000 / per_pass) and (start - 1) * per_pass < 2_250 <= start * per_pass
    assert start * per_pass < 3_000                                # ... and the long phase gets the rest
    assert data.long_from == start and data.epoch == 0             # placed for the run it was made for
    data.set_epoch(start - 1)
    short = next(iter(data))
    data.set_epoch(start)
    long = next(iter(data))
    assert short["input_ids"].shape[0] == 8 and short["input_ids"].shape[1] <= 32
    assert long["input_ids"].shape[0] == 4 and 32 < long["input_ids"].shape[1] <= 64
    assert data.long_phase_start(per_pass // 2) is None           # a run inside one pass has no long phase
    assert PretrainingBatches(docs, tok, cfg.replace(long_len=None)).long_phase_start(1_000) is None
    with pytest.raises(ValueError, match="long_len"):
        cfg.replace(long_len=16)


def test_without_nsp_the_same_pairs_train_masked_lm_alone(documents):
    """The NSP ablation (``nsp=False``; RoBERTa §4.2, XLNet Table 6): the batches are the same pairs, masked the
    same way, without ``nsp_labels``; the loss is the masked-LM loss alone, so no gradient reaches the NSP
    classifier or the ``[CLS]`` pooler; held-out evaluation reports no NSP accuracy."""
    docs, tok = _as_ids(documents[:30])
    cfg = BertPretrainingConfig.preset("smoke", max_len=32, batch_size=8)
    batches = {}
    for nsp in (True, False):
        random.seed(0)
        torch.manual_seed(0)
        batches[nsp] = next(iter(PretrainingBatches(docs, tok, cfg.replace(nsp=nsp))))
    assert "nsp_labels" in batches[True] and "nsp_labels" not in batches[False]
    for k in ("input_ids", "token_type_ids", "mlm_labels"):
        assert torch.equal(batches[True][k], batches[False][k]), k
    torch.manual_seed(0)
    model = BertForPreTraining(cfg.model_config(len(tok), tok.pad_id)).eval()
    out = model(**batches[False])
    assert "nsp_loss" not in out and torch.equal(out["loss"], out["mlm_loss"])
    out["loss"].backward()
    assert model.nsp.weight.grad is None and model.bert.pooler.weight.grad is None
    assert model.bert.embeddings.word.weight.grad is not None
    assert set(evaluate_pretraining(model, [batches[False]])) == {"mlm_acc", "mlm_loss"}
    assert "nsp_acc" in evaluate_pretraining(model, [batches[True]])
