"""WordPiece: agreement with Hugging Face's BERT tokenizers, greedy longest match, training, persistence."""
from __future__ import annotations

import inspect
import time
from collections import Counter
from pathlib import Path

import pytest

from shoulders.data import mirror_folder, wikitext2
from shoulders.text import VocabFileError, WordPiece

WT2 = mirror_folder("wikitext-2")  # SHOULDERS_DATA_MIRROR/wikitext-2, or None
needs_wt2 = pytest.mark.skipif(WT2 is None, reason="no WikiText-2 in the offline mirror: set SHOULDERS_DATA_MIRROR "
                               "to the book's shared/data folder")

TRICKY = [
    "Café Résumé naïve", "É CAFÉ", "e\u0301cole", "don't", "U.S. economy , 3.14 @-@ 1 @,@ 000",
    "İstanbul ŞEHİR", "emoji 😀 here ☃ ok", "x" * 150, "a" + "b" * 99 + " " + "a" * 101,
    "a[MASK]b [MASK] c [CLS] d[SEP]", "[UNK] = <unk> ; [mask] is not special", "東京タワー 北京 is cjk",
    "tab\there\u00a0nbsp\u200bzero \x00nul \ufffd",
    "…—–“quotes” «guillemets» ¿qué?", "a\x1cb c\u2028d", "   ", "", "Ünïcödé wörds: Straße, façade, smörgåsbord",
]

UNAFFABLE = WordPiece.SPECIALS + ("un", "##aff", "##able", "aff", "##a", "a", "##b", "runn", "##ing", "##s",
                                  "want", "##want", "##ed", "wa", ",", "!", "cafe", "'", "don", "t")


def wt2_lines(n: int | None = None) -> list[str]:
    lines = wikitext2("train", root=WT2, eos=None)
    lines = lines if n is None else lines[:n]
    return [" ".join(words).replace("<unk>", WordPiece.UNK) for words in lines]


@pytest.fixture(scope="module")
def sample() -> list[str]:
    return wt2_lines(4000)


@pytest.fixture(scope="module")
def trained(sample) -> WordPiece:
    return WordPiece.train(sample, vocab_size=3000)


# ---------------------------------------------------------------- greedy longest match, basic tokenizer
def test_greedy_longest_match_first():
    wp = WordPiece(UNAFFABLE)
    assert wp.word_pieces("unaffable") == ["un", "##aff", "##able"]  # the BERT README's example
    assert wp.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert wp.word_pieces("wanted") == ["want", "##ed"]  # longest first: "want", not "wa" + ...
    assert wp.word_pieces("aaab") == ["a", "##a", "##a", "##b"]
    assert wp.word_pieces("unx") == ["[UNK]"]  # one unmatched position -> the whole word is unknown
    assert wp.tokenize("UNAFFABLE, unaffablez!") == ["un", "##aff", "##able", ",", "[UNK]", "!"]
    assert wp.word_pieces("[MASK]") == ["[MASK]"]
    short = WordPiece(UNAFFABLE, max_chars_per_word=8)
    assert short.word_pieces("unaffable") == ["[UNK]"] and short.word_pieces("unwanted") == ["un", "##want", "##ed"]


def test_basic_tokenizer():
    wp = WordPiece(UNAFFABLE)
    assert wp.basic("Don't say \"Café\" [MASK].") == ["don", "'", "t", "say", '"', "cafe", '"', "[MASK]", "."]
    assert wp.basic("a[MASK]b\x00c \u200b d\u00a0e") == ["a", "[MASK]", "bc", "d", "e"]
    assert wp.basic("北京x") == ["北", "京", "x"]
    assert wp.basic("U.S.") == ["u", ".", "s", "."]
    assert wp.basic("[mask] [UNK]") == ["[", "mask", "]", "[UNK]"]  # specials are case-sensitive, never split
    cased = WordPiece(UNAFFABLE, lower=False)
    assert cased.basic("Café [MASK]") == ["Café", "[MASK]"]
    assert cased.tokenize("Cafe") == ["[UNK]"]


def test_constructor_needs_the_specials():
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"])
    with pytest.raises(ValueError, match="duplicate"):
        WordPiece(WordPiece.SPECIALS + ("a", "a"))
    wp = WordPiece(["x", *WordPiece.SPECIALS[::-1]])  # specials anywhere, as in Google's vocab.txt
    assert (wp.pad_id, wp.unk_id, wp.cls_id, wp.sep_id, wp.mask_id) == (5, 4, 3, 2, 1)


# ---------------------------------------------------------------- agreement with Hugging Face
def _hf_tokenizers(vocab_file: Path):
    transformers = pytest.importorskip("transformers")
    refs = {}
    try:  # transformers 5: the pure-Python one (Google's algorithm line by line) is BertTokenizerLegacy
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as Slow
    except ImportError:  # transformers 4: BertTokenizer is the pure-Python one
        Slow = transformers.BertTokenizer
    refs["python"] = Slow(vocab_file=str(vocab_file), do_lower_case=True)
    fast = transformers.BertTokenizerFast
    if "vocab" in inspect.signature(fast.__init__).parameters:  # transformers 5 takes the vocabulary as a dict
        lines = vocab_file.read_text(encoding="utf-8").split("\n")[:-1]
        refs["rust"] = fast(vocab={t: i for i, t in enumerate(lines)}, do_lower_case=True)
    else:
        refs["rust"] = fast(vocab_file=str(vocab_file), do_lower_case=True)
    return refs


@needs_wt2
def test_agrees_with_hugging_face(trained, sample, tmp_path):
    vocab_file = trained.save(tmp_path / "vocab.txt")
    refs = _hf_tokenizers(vocab_file)
    texts = sample[:400] + TRICKY
    for name, ref in refs.items():
        assert ref.convert_tokens_to_ids(trained.tokens) == list(range(len(trained)))
        for text in texts:
            expected = ref.tokenize(text)
            assert trained.tokenize(text) == expected, (name, text)
            assert trained.encode(text) == ref.convert_tokens_to_ids(expected), (name, text)
    long = trained.tokenize("x" * 150 + " ok")
    assert long[0] == "[UNK]"  # the check above is not vacuous: these cases occur
    assert trained.tokenize("a [MASK] b")[1] == "[MASK]"


# ---------------------------------------------------------------- training
@needs_wt2
def test_trained_vocabulary(trained, sample):
    tokens = trained.tokens
    assert tokens[:5] == list(WordPiece.SPECIALS)
    assert (trained.pad_id, trained.unk_id, trained.cls_id, trained.sep_id, trained.mask_id) == (0, 1, 2, 3, 4)
    assert len(trained) == 3000 and len(set(tokens)) == 3000
    assert not any(t.startswith("[") and len(t) > 1 for t in tokens[5:])  # "[UNK]" was not learned
    chars = {c for line in sample for w in trained.basic(line) if w not in WordPiece.SPECIALS for c in w}
    assert chars <= set(tokens) and {"##" + c for c in chars} <= set(tokens)
    unk = Counter()
    for line in sample:
        unk["text"] += line.split().count("[UNK]")
        unk["pieces"] += trained.tokenize(line).count("[UNK]")
    assert unk["text"] > 0 and unk["pieces"] == unk["text"]  # only the literal [UNK]s


def test_training_merges_by_likelihood_score_not_frequency():
    # "th" occurs 1000x, "qz" only 5x -- but q and z never occur apart, while t and h also occur elsewhere.
    texts = ["th"] * 1000 + ["ta", "ah"] * 10 + ["qz"] * 5
    one_merge = 5 + 2 * 5 + 1  # specials, a h q t z in both forms, one merge
    wp = WordPiece.train(texts, vocab_size=one_merge, min_freq=1, criterion="score")
    assert wp.tokens[-1] == "qz"  # score(q, ##z) = 5/(5*5) beats score(t, ##h) = 1000/(1010*1010)
    assert wp.tokenize("th qz") == ["t", "##h", "qz"]
    wp = WordPiece.train(texts, vocab_size=one_merge, min_freq=1)  # the default: likelihood
    assert wp.tokens[-1] == "th"  # the likelihood gain also weighs how often the pair occurs
    assert "qz" in WordPiece.train(texts, vocab_size=100, min_freq=1).tokens


def test_training_details():
    texts = ["low lower lowest"] * 3 + ["newer wider"] * 2 + ["rare!"]
    wp = WordPiece.train(texts, vocab_size=1000, min_freq=3, criterion="score")
    assert len(wp) < 1000  # stops when no pair is left to merge
    assert {"low", "lower", "lowest"} <= set(wp.tokens)  # merged until each frequent word is one piece
    assert not any(bigram in t for t in wp.tokens for bigram in ("ne", "ew", "wi", "id", "ra", "ar"))
    assert wp.tokenize("rare wider") == ["r", "##a", "##r", "##e", "w", "##i", "##d", "##er"]  # "##er": lower
    assert "##!" in wp.tokens and "!" in wp.tokens
    assert wp.tokens == WordPiece.train(list(texts), vocab_size=1000, min_freq=3, criterion="score").tokens
    likely = WordPiece.train(texts, vocab_size=1000, min_freq=3)  # the default criterion merges as far
    assert {"low", "lower", "lowest"} <= set(likely.tokens) and likely.tokens == WordPiece.train(
        list(texts), vocab_size=1000, min_freq=3).tokens
    with pytest.raises(ValueError, match="vocab_size"):
        WordPiece.train(texts, vocab_size=10)
    with pytest.raises(ValueError, match="criterion"):
        WordPiece.train(texts, criterion="frequency")
    with pytest.raises(TypeError):
        WordPiece.train("one string")


# ---------------------------------------------------------------- encode_words, decode, ids
def test_encode_words_and_decode():
    wp = WordPiece(UNAFFABLE)
    ids, index = wp.encode_words(["Unaffable", "don't", "\u200b", "[MASK]", "runnings"])
    assert wp.ids_to_tokens(ids) == ["un", "##aff", "##able", "don", "'", "t", "[UNK]", "[MASK]", "runn", "##ing",
                                     "##s"]
    assert index == [0, 0, 0, 1, 1, 1, 2, 3, 4, 4, 4]
    assert wp.encode_words([]) == ([], [])
    with pytest.raises(TypeError):
        wp.encode_words("a b")
    assert wp.decode(ids) == "unaffable don ' t [UNK] [MASK] runnings"
    assert wp.decode(wp.encode("Unwanted, unaffable!")) == "unwanted , unaffable !"
    assert wp.tokens_to_ids(["un", "zzz"]) == [wp.tokens.index("un"), wp.unk_id]
    with pytest.raises(IndexError):
        wp.ids_to_tokens([len(wp)])


# ---------------------------------------------------------------- persistence and errors
def test_save_load_round_trip(tmp_path):
    wp = WordPiece.train(["the cat sat on the mat", "Café [UNK] résumé"] * 3, vocab_size=60, min_freq=1)
    path = wp.save(tmp_path / "model")
    assert path == tmp_path / "model" / "vocab.txt"
    assert path.read_text(encoding="utf-8") == "\n".join(wp.tokens) + "\n"  # BERT's vocab.txt
    for where in (path, tmp_path / "model"):
        back = WordPiece.load(where)
        assert back.tokens == wp.tokens and back.tokenize("The cafe [MASK]") == wp.tokenize("The cafe [MASK]")
    assert wp.save(tmp_path / "v.txt").read_text(encoding="utf-8") == path.read_text(encoding="utf-8")
    assert [p.name for p in (tmp_path / "model").iterdir()] == ["vocab.txt"]  # no temporary file left


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no WordPiece vocabulary"):
        WordPiece.load(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    with pytest.raises(VocabFileError, match="empty"):
        WordPiece.load(tmp_path / "empty.txt")
    (tmp_path / "nospecials.txt").write_text("a\nb\n##c\n", encoding="utf-8")
    with pytest.raises(VocabFileError, match="special"):
        WordPiece.load(tmp_path / "nospecials.txt")
    (tmp_path / "crlf.txt").write_text("\r\n".join(WordPiece.SPECIALS + ("a",)) + "\r\n", encoding="utf-8")
    assert WordPiece.load(tmp_path / "crlf.txt").tokens[-1] == "a"


# ---------------------------------------------------------------- the full corpus (timings printed with -s)
@needs_wt2
def test_full_wikitext2_train_timings():
    lines = wt2_lines()
    start = time.perf_counter()
    wp = WordPiece.train(lines, vocab_size=8000)
    trained = time.perf_counter() - start
    start = time.perf_counter()
    n_ids = sum(len(wp.encode(line)) for line in lines)
    encoded = time.perf_counter() - start
    n_words = sum(len(line.split()) for line in lines)
    print(f"\nWordPiece on WikiText-2 train ({n_words:,} words): 8,000-entry vocabulary trained in {trained:.1f} s, "
          f"all lines encoded in {encoded:.1f} s ({n_ids:,} pieces)")
    assert len(wp) == 8000 and n_ids > n_words


def _log_likelihood(words: list[list[str]], freqs: list[int]) -> float:
    """sum_u n(u) log(n(u) / N) of a segmentation (the unigram likelihood WordPiece's gain is measured on)."""
    import math

    units: Counter = Counter()
    for w, f in zip(words, freqs):
        for u in w:
            units[u] += f
    total = sum(units.values())
    return sum(n * math.log(n / total) for n in units.values())


def _brute_force_merges(words: list[list[str]], freqs: list[int], merges: int) -> list[str]:
    """Greedy WordPiece by brute force: try every adjacent pair, merge it left to right without overlap, keep the
    merge whose segmentation has the highest unigram likelihood."""
    learned = []
    for _ in range(merges):
        best = None
        for a, b in sorted({p for w in words for p in zip(w, w[1:])}):
            merged = []
            for w in words:
                out, i = [], 0
                while i < len(w):
                    if i + 1 < len(w) and (w[i], w[i + 1]) == (a, b):
                        out.append(a + b[2:])
                        i += 2
                    else:
                        out.append(w[i])
                        i += 1
                merged.append(out)
            score = _log_likelihood(merged, freqs)
            if best is None or score > best[0] + 1e-9:
                best = (score, a + b[2:], merged)
        learned.append(best[1])
        words = best[2]
    return learned


def test_runs_of_one_character_train_and_their_gain_is_exact():
    """'1000' holds two overlapping (##0, ##0) pairs but merges once ('##00', '##0'): the likelihood gain must
    count one merge (counting two took the log of a negative number: ValueError: math domain error). The merges
    learned are those of a brute-force likelihood search."""
    for text, words, freqs, vocab in (("1000 1000", [["1", "##0", "##0", "##0"]], [2], 40),
                                      ("aaaa aaaaa aaaa xy", [["a", "##a", "##a", "##a"], ["a", "##a", "##a", "##a",
                                                                                            "##a"], ["x", "##y"]],
                                       [2, 1, 1], 40)):
        wp = WordPiece.train([text], vocab_size=vocab, min_freq=1)
        alphabet = 5 + 2 * len(set(text.replace(" ", "")))
        learned = wp.tokens[alphabet:]
        assert learned == _brute_force_merges(words, freqs, len(learned)), text
    assert WordPiece.train(["1000 1000"], vocab_size=40).tokenize("1000") == ["1000"]


def test_words_too_long_to_encode_are_not_learned_from():
    """A word longer than max_chars_per_word encodes as [UNK]: training skips it (it took 232 s for 100k chars)."""
    long_word = "ab" * 50_000
    wp = WordPiece.train([long_word + " hello world hello world"], vocab_size=60, min_freq=1)
    assert wp.tokenize(long_word) == ["[UNK]"] and "hello" in wp.tokens
    assert not any(t.startswith("abab") or t.startswith("##abab") for t in wp.tokens)
