"""Paragraph vectors (Le & Mikolov 2014): the hand-written SGD step against autograd for PV-DM and PV-DBOW, the
inference stage moving only the new paragraph vectors, the batches (paragraph ids, windows inside a paragraph), and
that trained and inferred vectors carry a paragraph's topic where the random starting vectors do not."""
from __future__ import annotations

import random

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.evaluate.probe import linear_probe
from shoulders.models.paragraph_vectors import ParagraphBatches, ParagraphVectorConfig, prepare_documents
from shoulders.recipes.sentence_vectors import infer_vectors, paragraph_encoder, train_paragraph_vectors

COUNTS = torch.tensor([50, 30, 20, 10, 9, 8, 7, 6, 5, 4, 3, 2])


def _cfg(**kw):
    base = dict(dim=6, window=2, negatives=3, vocab_size=12, min_count=1, batch_words=50, num_docs=4)
    return ParagraphVectorConfig(**{**base, **kw})


def _batch(arch):
    if arch == "dbow":
        return torch.tensor([0, 1, 1, 3, 0]), torch.tensor([3, 3, 0, 11, 2]), None
    x = torch.tensor([[0, 0, 1, 2, 3], [2, 4, 4, 5, 6], [0, 1, 2, 3, 11]])  # column 0: the paragraph
    mask = torch.tensor([[1, 1, 1, 0, 1], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]]).bool()  # the last row: d_p alone
    return x, torch.tensor([5, 0, 7]), mask


@pytest.mark.parametrize("arch", ["dbow", "dm"])
def test_sgd_step_is_sgd_on_the_autograd_gradient(arch, one_thread):
    torch.manual_seed(0)
    model = _cfg(arch=arch).build(COUNTS)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.5)
    x, y, mask = _batch(arch)
    noise = torch.randint(12, (y.numel(), 3))
    noise[0, 0] = y[0]  # a draw equal to the target is skipped
    loss = model.out.loss(model.hidden(x, mask), y, noise=noise) * y.numel()
    loss.backward()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    grads = {k: torch.zeros_like(v) if v.grad is None else v.grad.clone() for k, v in model.named_parameters()}
    lr = 0.05
    got = model.sgd_step(x, y, mask, lr, noise=noise)
    torch.testing.assert_close(got, loss.detach())
    for k, v in model.named_parameters():
        torch.testing.assert_close(v.detach(), before[k] - lr * grads[k], msg=f"{arch}: {k}")
    assert (model.embed.weight.grad is None) == (arch == "dbow")  # PV-DBOW does not use the word vectors


@pytest.mark.parametrize("arch", ["dbow", "dm"])
def test_inference_moves_only_the_new_paragraph_vectors(arch, one_thread):
    torch.manual_seed(0)
    model = _cfg(arch=arch).build(COUNTS)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.5)
    x, y, mask = _batch(arch)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    table = model.new_docs(4, seed=1)
    start = table.clone()
    model.sgd_step(x, y, mask, 0.05, noise=torch.randint(12, (y.numel(), 3)), docs=table)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # D, W and v' frozen
    touched = (x if arch == "dbow" else x[:, 0]).unique()
    assert not torch.equal(table[touched], start[touched])
    untouched = [i for i in range(4) if i not in touched.tolist()]
    assert torch.equal(table[untouched], start[untouched])


@pytest.mark.parametrize("arch", ["dbow", "dm"])
def test_batches_pair_each_token_with_its_own_paragraph(arch):
    docs = [["a", "b", "c"], [], ["c", "d", "a", "b", "d"], ["b"]]
    corpus = prepare_documents(docs, min_count=1)
    assert corpus.sentence.tolist() == [0, 0, 0, 2, 2, 2, 2, 2, 3]  # the empty paragraph keeps index 1
    batches = ParagraphBatches(corpus, arch, window=2, batch_words=4, sample=0.0, seed=0, shuffle_run=0)
    seen = 0
    for x, y, *mask in batches:
        if arch == "dbow":
            torch.testing.assert_close(x, corpus.sentence[seen: seen + len(y)])
        else:
            m = mask[0]
            assert m[:, 0].all() and torch.equal(x[:, 0], corpus.sentence[seen: seen + len(y)])
            pos = torch.arange(seen, seen + len(y))
            for r in range(len(y)):  # every context word of a window lies in the centre's paragraph
                for j in m[r, 1:].nonzero().flatten().tolist():
                    off = [-2, -1, 1, 2][j]
                    assert corpus.sentence[pos[r] + off] == x[r, 0]
        torch.testing.assert_close(y, corpus.ids[seen: seen + len(y)])
        seen += len(y)
    assert seen == len(corpus)


def _topic_docs(n: int, seed: int) -> tuple[list[list[str]], list[int]]:
    """Paragraphs of 12 words: 8 from their topic's 30 words, 4 from 30 shared ones, in random order."""
    rng = random.Random(seed)
    docs, labels = [], []
    for _ in range(n):
        t = rng.randrange(2)
        words = rng.choices([f"t{t}w{i}" for i in range(30)], k=8) + rng.choices([f"s{i}" for i in range(30)], k=4)
        rng.shuffle(words)
        docs.append(words)
        labels.append(t)
    return docs, labels


@pytest.mark.parametrize("arch", ["dbow", "dm"])
def test_trained_and_inferred_vectors_carry_the_topic(arch, one_thread):
    train_docs, train_y = _topic_docs(300, 0)
    test_docs, test_y = _topic_docs(200, 1)
    cfg = ParagraphVectorConfig(arch=arch, dim=20, window=3, negatives=5, min_count=1, epochs=20, infer_epochs=20,
                                sample=0.0, batch_words=200, lr=0.025)
    model, corpus, history = train_paragraph_vectors(cfg, train_docs, progress=False)
    assert history.last("loss") < history.series("loss")[1][0]
    inferred = infer_vectors(model, corpus.vocab, test_docs)
    assert inferred.shape == (200, 20)
    ty, tt = torch.tensor(train_y), torch.tensor(test_y)
    # a probe fitted on the trained vectors reads the topic of paragraphs it never saw, through inference
    assert linear_probe(model.vectors(), ty, inferred, tt) > 90.0
    # and the encoder SentEval calls gives the same vectors for the same seed
    enc = paragraph_encoder(model, corpus.vocab, tokenize=str.split)
    torch.testing.assert_close(enc([" ".join(d) for d in test_docs]), inferred)


def test_untrained_vectors_do_not_carry_the_topic(one_thread):
    """The floor the test above must clear: the same probe on the random starting vectors is near chance."""
    train_docs, train_y = _topic_docs(300, 0)
    test_docs, test_y = _topic_docs(200, 1)
    cfg = ParagraphVectorConfig(arch="dbow", dim=20, min_count=1, sample=0.0)
    corpus = prepare_documents(train_docs, min_count=1)
    model = cfg.build(corpus.counts, num_docs=len(train_docs))
    acc = linear_probe(model.vectors(), torch.tensor(train_y), model.new_docs(200, 1), torch.tensor(test_y))
    assert acc < 70.0


def test_config_errors():
    with pytest.raises(ConfigError, match="arch"):
        ParagraphVectorConfig(arch="sg")
    with pytest.raises(ConfigError, match="negative sampling"):
        ParagraphVectorConfig(output="hs")
    with pytest.raises(ConfigError, match="infer_epochs"):
        ParagraphVectorConfig(infer_epochs=0)
    with pytest.raises(ValueError, match="min_count"):
        prepare_documents([["a"], ["b"]], min_count=5)


def test_the_giant_keeps_what_inference_reads_and_infers_the_same_after_loading(tmp_path, monkeypatch, one_thread):
    import shoulders as sh

    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "giants"))
    docs = [s.split() for s in ("the cat sat on the mat", "a dog ran in the park", "the cat ran to the dog")] * 20
    cfg = _cfg(vocab_size=50, epochs=2, num_docs=5)
    first = sh.giants.load("paragraph_vectors", cfg, progress=False, docs=docs)
    assert first.trained and first.model.docs.weight.shape == (5, 6)  # not the 60 training paragraphs' rows
    second = sh.giants.load("paragraph_vectors", cfg, progress=False)
    assert not second.trained and second.tokenizer.tokens == first.tokenizer.tokens
    for name in ("embed.weight", "out.weight"):
        torch.testing.assert_close(second.model.state_dict()[name], first.model.state_dict()[name])
    texts = ["the cat sat", "a dog in the park"]
    again = paragraph_encoder(second.model, second.tokenizer)(texts)
    torch.testing.assert_close(again, paragraph_encoder(first.model, first.tokenizer)(texts))
    assert not torch.equal(again, second.model.new_docs(2))  # inference moved the fresh vectors
