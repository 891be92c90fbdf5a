"""Property tests (hypothesis): the tokenizers never crash on any text and keep their encode/decode contracts.

Generated text mixes letters, digits, punctuation, whitespace, accents, CJK, emoji, control and zero-width
characters and runs of one character (the input that crashed WordPiece's training with a math domain error).
"""
from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoulders.text import Vocab, WordPiece

ALPHABET = st.sampled_from(list(string.ascii_letters + string.digits + string.punctuation + "   \t\n")
                           + list("éèüñçÅ中文字😀\u200b\u00ad\x00\x07") + ["[UNK]", "[MASK]"])
TEXT = st.lists(ALPHABET, max_size=60).map("".join)
RUNS = st.tuples(st.sampled_from("ab01"), st.integers(1, 12)).map(lambda cn: cn[0] * cn[1])
CORPUS = st.lists(st.one_of(TEXT, RUNS, RUNS.map(lambda r: f"{r} {r}")), min_size=1, max_size=8)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _train(corpus: list[str], extra: int) -> WordPiece | None:
    """Train with ``extra`` entries beyond what the specials and characters need; None when the corpus has none."""
    try:
        WordPiece.train(corpus, vocab_size=5, min_freq=1)
    except ValueError as err:  # the size needed is in the message: "... characters ... (N entries)"
        needed = int(str(err).rsplit("(", 1)[1].split()[0])
        return WordPiece.train(corpus, vocab_size=needed + extra, min_freq=1)
    return None


@FAST
@given(CORPUS, st.integers(0, 40), TEXT)
def test_wordpiece_trains_and_encodes_any_text(corpus, extra, probe):
    wp = _train(corpus, extra)
    if wp is None:
        return
    V = len(wp.tokens)
    for text in corpus + [probe]:
        ids = wp.encode(text)
        assert all(0 <= i < V for i in ids)
        assert wp.ids_to_tokens(ids) == wp.tokenize(text)
        words, index = wp.encode_words(text.split())
        assert len(words) == len(index) and index == sorted(index)


@FAST
@given(CORPUS, st.integers(0, 40))
def test_wordpiece_decode_inverts_encode_on_its_own_words(corpus, extra):
    """For text made of the basic tokens of the training corpus (no [UNK]), decode(encode(x)) is those tokens
    joined by single spaces: the pieces glue back into their words."""
    wp = _train(corpus, extra)
    if wp is None:
        return
    for text in corpus:
        basic = wp.basic(text)
        ids = wp.encode(text)
        if wp.unk_id not in ids:
            assert wp.decode(ids) == " ".join(basic)


@FAST
@given(st.lists(st.lists(TEXT.filter(lambda t: t and "\n" not in t and "\r" not in t), max_size=6), max_size=6))
def test_vocab_save_load_round_trip(tmp_path_factory, lines):
    vocab = Vocab.build(lines, unk="<unk>", min_freq=1)
    path = tmp_path_factory.mktemp("v") / "vocab.json"
    try:
        vocab.save(path)
    except ValueError as err:  # only a token UTF-8 cannot hold may be refused, and it is named
        assert "cannot be written as UTF-8" in str(err)
        return
    back = Vocab.load(path)
    assert back.tokens == vocab.tokens and [back.counts[t] for t in back.tokens] == [vocab.counts[t] for t in
                                                                                     vocab.tokens]


WORDS = st.sampled_from(["a", "b", "c", "the", "of", "x1", "é", "中"])
LINES = st.lists(st.lists(WORDS, min_size=1, max_size=6).map(lambda w: w + ["<eos>"]), min_size=2, max_size=12)


@FAST
@given(LINES, LINES, st.sampled_from(["mkn", "kn", "katz", "interpolation", "add_k"]), st.integers(1, 3))
def test_arpa_write_read_round_trip_scores_the_same(tmp_path_factory, train, test, method, n):
    """Any model the package can write reads back scoring every token of any text the same (to 1e-9 in log)."""
    import warnings

    import numpy as np

    from shoulders.models import ngram

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny corpora make the discount estimates fall back
        lm = ngram.NGramLM(ngram.count_ngrams(train, order=n), n=n, smoothing=method)
    path = tmp_path_factory.mktemp("arpa") / "lm.arpa"
    ngram.write_arpa(lm, path)
    back = ngram.read_arpa(path)
    ours, theirs = lm.token_logprobs(test), back.token_logprobs(test)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-9)
