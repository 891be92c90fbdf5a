"""word2vec: negative sampling and subsampling, dynamic windows, pairs, hand-written gradients, overfitting."""
from __future__ import annotations

import math

import pytest
import torch

from shoulders.config import ConfigError
from shoulders.models import word2vec as w2v
from shoulders.models.negative_sampling import (NegativeSampler, NegativeSampling, keep_probability,
                                                noise_distribution, subsample)
from shoulders.recipes import word_vectors as wv
from shoulders.train.forked import fork_context

COUNTS = torch.tensor([1000, 400, 50, 10, 3, 1])


def test_noise_distribution_is_unigram_to_the_three_quarters():
    p = noise_distribution(COUNTS)
    want = COUNTS.double() ** 0.75
    torch.testing.assert_close(p, want / want.sum())
    assert noise_distribution([4, 0, 1])[1] == 0


def test_sampler_draws_from_the_noise_distribution():
    sampler = NegativeSampler(COUNTS)
    g = torch.Generator().manual_seed(0)
    draws = sampler.sample((200_000,), g)
    freq = torch.bincount(draws, minlength=6).double() / draws.numel()
    torch.testing.assert_close(freq, noise_distribution(COUNTS), atol=4e-3, rtol=0)
    torch.testing.assert_close(sampler.probs, noise_distribution(COUNTS), atol=1e-6, rtol=1e-5)


def test_keep_probability_formulas():
    t = 1e-2
    f = COUNTS.double() / COUNTS.sum()
    torch.testing.assert_close(keep_probability(COUNTS, t), (t / f).sqrt().clamp(max=1))  # eq. 5
    torch.testing.assert_close(keep_probability(COUNTS, t, "word2vec.c"), ((t / f).sqrt() + t / f).clamp(max=1))
    assert keep_probability(COUNTS, 0).eq(1).all()
    # the most frequent word (f = 0.68) is kept with probability sqrt(0.01 / 0.68)
    assert float(keep_probability(COUNTS, t)[0]) == pytest.approx(math.sqrt(t * COUNTS.sum().item() / 1000))
    with pytest.raises(ValueError):
        keep_probability(COUNTS, t, "nope")


def test_subsample_keeps_at_the_keep_rate():
    ids = torch.zeros(100_000, dtype=torch.long)
    keep = torch.tensor([0.3, 1.0])
    frac = subsample(ids, keep, torch.Generator().manual_seed(0)).double().mean()
    assert abs(float(frac) - 0.3) < 0.01


def test_dynamic_window_sizes():
    b = w2v.dynamic_window(10_000, 5, torch.Generator().manual_seed(0))
    assert int(b.min()) == 1 and int(b.max()) == 5
    assert set(b.tolist()) == {1, 2, 3, 4, 5}


def test_window_pairs_respect_window_lines_and_ends():
    ids = torch.arange(10)
    sentence = torch.tensor([0] * 6 + [1] * 4)
    center, context, mask = w2v.window_pairs(ids, sentence, 3, generator=torch.Generator().manual_seed(0))
    off = torch.tensor([-3, -2, -1, 1, 2, 3])
    for i in range(10):
        for j in range(6):
            if mask[i, j]:
                c = int(context[i, j])
                assert c == i + int(off[j]) and sentence[c] == sentence[i]
    # a window is a contiguous run around the centre: |offset| <= b for some b in 1..3
    b = (mask * off.abs()).amax(1)
    for i in range(10):
        inside = [(0 <= i + o < 10) and sentence[min(max(i + o, 0), 9)] == sentence[i] and abs(o) <= b[i]
                  for o in off.tolist()]
        assert mask[i].tolist() == inside


def _cfg(**kw):
    base = dict(dim=6, window=2, negatives=3, vocab_size=12, min_count=1, batch_words=50)
    return w2v.Word2VecConfig(**{**base, **kw})


@pytest.mark.parametrize("arch", ["sg", "cbow"])
@pytest.mark.parametrize("output", ["ns", "hs", "softmax"])
def test_sgd_step_is_sgd_on_the_autograd_gradient(arch, output, one_thread):
    torch.manual_seed(0)
    counts = torch.tensor([50, 30, 20, 10, 9, 8, 7, 6, 5, 4, 3, 2])
    model = _cfg(arch=arch, output=output).build(counts)
    if output == "hs":
        model.out.damp_shared = False  # the plain gradient step (the default damps shared nodes)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.5)
    if arch == "sg":
        x, y, mask = torch.tensor([0, 1, 2, 5, 1]), torch.tensor([3, 3, 0, 11, 2]), None
    else:
        x = torch.tensor([[0, 1, 2, 3], [4, 4, 5, 6], [1, 2, 3, 11]])
        y, mask = torch.tensor([5, 0, 7]), torch.tensor([[1, 1, 0, 1], [1, 1, 1, 1], [0, 1, 0, 0]]).bool()
    kw = {}
    if output == "ns":
        kw["noise"] = torch.randint(12, (y.numel(), 3))
        kw["noise"][0, 0] = y[0]  # a draw equal to the target is skipped
        loss = model.out.loss(model.hidden(x, mask), y, noise=kw["noise"]) * y.numel()
    else:
        loss = model(x, y, mask) * y.numel()
    loss.backward()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    grads = {k: v.grad.clone() for k, v in model.named_parameters()}
    lr = 0.05
    got = model.sgd_step(x, y, mask, lr, **kw)
    torch.testing.assert_close(got, loss.detach())
    for k, v in model.named_parameters():
        torch.testing.assert_close(v.detach(), before[k] - lr * grads[k], msg=f"{arch}/{output}: {k}")


def test_shared_negatives_equal_per_example_noise(one_thread):
    """group=G with noise (nG, k), nG = ceil(B/G), is the same as example b drawing row b % nG."""
    torch.manual_seed(0)
    sampler = NegativeSampler(COUNTS)
    a, b = NegativeSampling(sampler, 4, negatives=2), NegativeSampling(sampler, 4, negatives=2)
    torch.nn.init.normal_(a.weight)
    b.weight.data.copy_(a.weight.data)
    h, y = torch.randn(5, 4), torch.tensor([0, 1, 2, 3, 0])
    noise = torch.tensor([[0, 4], [5, 1], [2, 2]])  # groups of 2, nG = 3: examples (0, 3), (1, 4), (2,)
    la, dha = a.sgd_step(h, y, 0.1, noise=noise, group=2)
    lb, dhb = b.sgd_step(h, y, 0.1, noise=noise[torch.arange(5) % 3], group=1)
    torch.testing.assert_close(la, lb)
    torch.testing.assert_close(dha, dhb)
    torch.testing.assert_close(a.weight, b.weight)
    with pytest.raises(ValueError):
        a.sgd_step(h, y, 0.1, noise=noise[:2], group=2)


@pytest.mark.parametrize("arch,output", [("sg", "ns"), ("cbow", "hs"), ("sg", "softmax")])
def test_one_batch_overfit(arch, output, one_thread):
    torch.manual_seed(0)
    counts = torch.tensor([40, 30, 20, 10, 9, 8, 7, 6])
    model = _cfg(arch=arch, output=output, vocab_size=8, dim=16).build(counts)
    if arch == "sg":
        batch = (torch.tensor([0, 1, 2, 3]), torch.tensor([4, 5, 6, 7]), None)
    else:
        batch = (torch.tensor([[0, 1], [2, 3], [4, 5], [6, 7]]), torch.tensor([7, 6, 5, 4]), None)
    noise = torch.tensor([[0, 1, 2]] * 4)
    kw = {"noise": noise} if output == "ns" else {}

    def loss() -> float:
        with torch.no_grad():
            return float(model.out.loss(model.hidden(batch[0]), batch[1], **kw))

    first = loss()
    for _ in range(300):
        model.sgd_step(*batch, lr=0.5, **kw)
    last = loss()
    assert last < 0.1 * first and last < 0.2, (first, last)


def shared_context_lines(n: int) -> list[list[str]]:
    """``n`` three-word lines: "x a y" or "x b y" (a and b share every context) or "u z v", drawn with seed 0."""
    g = torch.Generator().manual_seed(0)
    lines = []
    for _ in range(n):
        ctx = ["x", "y"] if torch.rand((), generator=g) < 0.5 else ["u", "v"]
        w = "a" if torch.rand((), generator=g) < 0.5 else "b"
        lines.append([ctx[0], w, ctx[1]] if ctx[0] == "x" else [ctx[0], "z", ctx[1]])
    return lines


def test_corpus_batches_and_train_learn(one_thread):
    """A corpus where 'a' and 'b' share every context: after training they are closer than 'a' and 'z'."""
    lines = shared_context_lines(300)
    cfg = w2v.Word2VecConfig(dim=10, window=2, negatives=2, min_count=1, sample=0, epochs=20, batch_words=64,
                             lr=0.1, share_negatives=1)
    torch.manual_seed(0)
    corpus = wv.prepare(cfg, lines)
    assert len(corpus) == 900 and corpus.vocab.tokens[:2] in (["u", "v"], ["x", "y"], ["v", "u"], ["y", "x"])
    batches = cfg.batches(corpus)
    center, context = next(iter(batches))
    assert center.shape == context.shape and center.dim() == 1
    model = cfg.build(corpus.counts)
    hist = wv.train_word2vec(model, corpus, cfg, progress=False)
    assert hist.series("loss")[1][-1] < hist.series("loss")[1][0]
    W = torch.nn.functional.normalize(model.vectors(), dim=1)
    i = corpus.vocab.stoi
    assert float(W[i["a"]] @ W[i["b"]]) > float(W[i["a"]] @ W[i["z"]]) + 0.3
    assert hist.last("lr") < cfg.lr * 0.2  # the linear decay ran


def test_skipgram_predict_orients_the_pairs():
    """predict="centre" (word2vec.c, gensim) yields (context, centre) pairs, "context" the same pairs as
    (centre, context); a line "a b c" with window 1 has the pairs a-b, b-a, b-c, c-b."""
    lines = [["a", "b", "c"]]
    pairs = {}
    for predict in ("centre", "context"):
        cfg = w2v.Word2VecConfig(dim=4, window=1, min_count=1, sample=0, batch_words=10, predict=predict)
        corpus = wv.prepare(cfg, lines)
        x, y = next(iter(cfg.batches(corpus)))
        tok = corpus.vocab.tokens
        pairs[predict] = sorted((tok[i], tok[j]) for i, j in zip(x.tolist(), y.tolist()))
    assert pairs["context"] == [("a", "b"), ("b", "a"), ("b", "c"), ("c", "b")]  # (input, target)
    assert pairs["centre"] == pairs["context"]  # the same pairs either way (symmetric windows) ...
    # ... but under "centre" the target of every pair of a window is that window's centre
    cfg = w2v.Word2VecConfig(dim=4, window=1, min_count=1, sample=0, batch_words=1, predict="centre",
                             shuffle_run=0)
    corpus = wv.prepare(cfg, lines)
    targets = [set(corpus.vocab.tokens[t] for t in y.tolist()) for _, y in cfg.batches(corpus)]
    assert targets == [{"a"}, {"b"}, {"c"}]
    with pytest.raises(ConfigError):
        w2v.Word2VecConfig(predict="both")


def test_shuffled_runs_cover_every_centre_once():
    """shuffle_run = r: an epoch visits every kept token once as a centre, in runs of r consecutive tokens taken
    in random order (a new order each epoch); its pairs are the in-order epoch's, and the raw-token count for the
    learning-rate decay still ends at the corpus size."""
    lines = [[f"w{(7 * i + j) % 50}" for j in range(20)] for i in range(30)]  # 600 tokens, 50 words
    base = dict(dim=4, window=1, min_count=1, sample=0, batch_words=40, predict="context")  # window 1: b = 1
    pairs = {}
    for r in (0, 4):
        cfg = w2v.Word2VecConfig(**base, shuffle_run=r)
        corpus = wv.prepare(cfg, lines)
        got = list(cfg.batches(corpus).epoch(0))
        raws = [raw for _, raw in got]
        assert raws == sorted(raws) and raws[-1] == len(corpus) == 600
        pairs[r] = sorted(zip(torch.cat([b[0] for b, _ in got]).tolist(), torch.cat([b[1] for b, _ in got]).tolist()))
    assert pairs[4] == pairs[0]  # the same pairs, in another order

    cfg = w2v.Word2VecConfig(**base, shuffle_run=4, arch="cbow")
    corpus = wv.prepare(cfg, lines)

    def centres(c, epoch):
        return torch.cat([b[1] for b, _ in c.batches(corpus).epoch(epoch)])

    first = centres(cfg, 0)
    assert sorted(first.tolist()) == sorted(corpus.ids.tolist())  # every token once as a centre ...
    assert not torch.equal(first, centres(cfg.replace(shuffle_run=0), 0))  # ... not in corpus order ...
    assert not torch.equal(first, centres(cfg, 1))  # ... and in a new order every epoch
    runs = {tuple(corpus.ids[p: p + 4].tolist()) for p in range(0, 600, 4)}
    assert all(tuple(first[i: i + 4].tolist()) in runs for i in range(0, 600, 4))  # runs of 4 stay together
    with pytest.raises(ConfigError):
        w2v.Word2VecConfig(shuffle_run=-1)


def test_epoch_parts_split_the_batches():
    """parts = n (Hogwild workers): the parts share one subsample and order and take every n-th batch, so
    together they visit every kept centre once; each part's raw count ends at its share of the corpus."""
    lines = [[f"w{(7 * i + j) % 50}" for j in range(20)] for i in range(30)]  # 600 tokens
    cfg = w2v.Word2VecConfig(dim=4, window=2, min_count=1, sample=1e-3, batch_words=40, arch="cbow")
    corpus = wv.prepare(cfg, lines)
    batches = cfg.batches(corpus)
    whole = torch.cat([b[1] for b, _ in batches.epoch(3)])
    parts = [list(batches.epoch(3, p, 3)) for p in range(3)]
    centres = torch.cat([b[1] for part in parts for b, _ in part])
    assert sorted(centres.tolist()) == sorted(whole.tolist()) and len(whole) < 600  # subsampled, same tokens
    assert sum(part[-1][1] for part in parts) == pytest.approx(600, abs=3)
    second = list(batches.epoch(3))[1][0][1]  # the whole epoch's second batch is part 1's first
    assert sorted(parts[1][0][0][1].tolist()) == sorted(second.tolist())
    with pytest.raises(ValueError):
        list(batches.epoch(0, 3, 3))


def test_hogwild_workers_train_one_model():
    """workers=2: a forked worker and this process update the same shared tables (Hogwild); together they read
    every epoch's words once, the rate decays over all of them, and the model learns."""
    if fork_context() is None:
        pytest.skip("no fork on this platform: workers > 1 falls back to one")
    lines = shared_context_lines(600)
    cfg = w2v.Word2VecConfig(dim=10, window=2, negatives=2, min_count=1, sample=0, epochs=10, batch_words=64,
                             lr=0.05, share_negatives=1, workers=2)  # 7 words: 0.2 diverges even on one worker
    corpus = wv.prepare(cfg, lines)
    torch.manual_seed(0)
    model = cfg.build(corpus.counts)
    threads = torch.get_num_threads()
    hist = wv.train_word2vec(model, corpus, cfg, progress=False, evaluate=lambda m: {"norm": float(m.vectors().norm())},
                             eval_every=10)
    assert torch.get_num_threads() == threads  # restored
    assert hist.last("words") == pytest.approx(cfg.epochs * len(corpus), abs=cfg.epochs * 2)
    assert hist.series("loss")[1][-1] < hist.series("loss")[1][0] and hist.last("lr") < cfg.lr * 0.2
    assert len(hist.series("norm")[0]) >= 2
    W = torch.nn.functional.normalize(model.vectors(), dim=1)
    i = corpus.vocab.stoi
    assert float(W[i["a"]] @ W[i["b"]]) > float(W[i["a"]] @ W[i["z"]]) + 0.3  # the children's updates landed
    with pytest.raises(ConfigError):
        w2v.Word2VecConfig(workers=0)


def test_steps_budget_and_cbow_batches(one_thread):
    lines = [["a", "b", "c", "d", "e"]] * 40
    cfg = w2v.Word2VecConfig(arch="cbow", output="hs", dim=4, window=2, min_count=1, sample=0, batch_words=10)
    corpus = wv.prepare(cfg, lines)
    ctx, center, mask = next(iter(cfg.batches(corpus)))
    assert ctx.shape == (10, 4) and mask.shape == (10, 4) and center.shape == (10,)
    hist = wv.train_word2vec(cfg.build(corpus.counts), corpus, cfg, steps=3, progress=False)
    assert hist.last_step() == 3


def test_config_errors():
    with pytest.raises(ConfigError):
        w2v.Word2VecConfig(arch="glove")
    with pytest.raises(ConfigError):
        w2v.Word2VecConfig(output="nce")
    with pytest.raises(ConfigError):
        w2v.Word2VecConfig.preset("smoke", windows=3)


@pytest.mark.parametrize("name", ["word2vec", "fasttext"])
def test_the_vector_giants_train_once_and_load_the_same_vectors(name, tmp_path, monkeypatch, one_thread):
    import shoulders as sh
    from shoulders.models.fasttext import SubwordConfig

    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "giants"))
    cls = w2v.Word2VecConfig if name == "word2vec" else SubwordConfig
    cfg = cls.preset("smoke").replace(train_tokens=30_000, epochs=2, workers=1)
    first = sh.giants.load(name, cfg, progress=False)
    assert first.trained and "analogy" in first.metrics and "ws353" in first.metrics
    loss = first.history.series("loss")[1]
    assert loss[-1] < loss[0], f"{name}: the loss did not fall"
    second = sh.giants.load(name, cfg, progress=False)
    assert not second.trained and second.tokenizer.tokens == first.tokenizer.tokens
    assert torch.equal(second.model.vectors(), first.model.vectors())
    assert second.model.vectors().shape == (len(second.tokenizer), cfg.dim)
    if name == "fasttext":  # a word never seen still gets a vector from its character n-grams
        assert second.model.word_vector("unseenwordzz").shape == (cfg.dim,)
