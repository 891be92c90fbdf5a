"""Byte-level BPE: agreement with Hugging Face's ``tokenizers`` (encoding our files, and training), round trips,
GPT-2's files, special tokens and the errors of malformed files."""
from __future__ import annotations

import json
import string
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import ByteLevelBPETokenizer

from shoulders.data import mirror_folder, wikitext2
from shoulders.text import ByteLevelBPE, VocabFileError
from shoulders.text.bpe import PATTERN, bytes_to_unicode

WT2 = mirror_folder("wikitext-2")  # SHOULDERS_DATA_MIRROR/wikitext-2, or None
needs_wt2 = pytest.mark.skipif(WT2 is None, reason="no WikiText-2 in the offline mirror: set SHOULDERS_DATA_MIRROR "
                               "to the book's shared/data folder")
EOS = "<|endoftext|>"

TRICKY = [
    "Café Résumé naïve", "e\u0301cole", "İstanbul ŞEHİR Straße façade smörgåsbord", "東京タワー 北京 中文字",
    "emoji 😀 here ☃ ok 👩‍👩‍👧 🇫🇷", "don't I'm we'll they've she'd it's you're DON'T 'tis", "3.14 @-@ 1 @,@ 000 1990s",
    "12345678901234567890 ½ ² ٣", "a  b   c    d", "   leading", "trailing   ", "   ", "", "\n", "line\nbreak\n\n",
    "tab\there\u00a0nbsp\u200bzero \x00nul \ufffd\x7f", "…—–“quotes” «guillemets» ¿qué?", "a\x1cb c\u2028d\re\r\nf",
    "x" * 300, "<|endoftext|>", "a<|endoftext|>b <|endoftext|> c<|endoftext|><|endoftext|>",
    "<|endoftext| <|endof <|notspecial|> <| |>", "Ġhe Ċ Ā ÿ", "   \n\n  x  \n",
]


def wt2_lines(split: str = "train", n: int | None = None) -> list[str]:
    lines = wikitext2(split, root=WT2, eos=None)
    return [" ".join(words) for words in (lines if n is None else lines[:n])]


def hf_trained(texts: list[str], vocab_size: int, min_frequency: int = 2,
               special_tokens: tuple[str, ...] = (EOS,)) -> ByteLevelBPETokenizer:
    """Hugging Face's byte-level BPE trained as ours: GPT-2's pre-tokenisation and all 256 bytes to start from."""
    hf = ByteLevelBPETokenizer()  # add_prefix_space=False, no normaliser: GPT-2's
    hf.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=min_frequency, show_progress=False,
                           special_tokens=list(special_tokens))  # initial_alphabet = the 256 bytes
    return hf


def hf_merges(hf: ByteLevelBPETokenizer) -> list[tuple[str, str]]:
    merges = json.loads(hf._tokenizer.to_str())["model"]["merges"]
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]  # "a b" or ["a", "b"]


def hf_reading(path) -> ByteLevelBPETokenizer:
    """Hugging Face's tokenizer reading the vocab.json and merges.txt we wrote, with the special tokens added."""
    hf = ByteLevelBPETokenizer(str(path), str(path.with_name("merges.txt")))
    hf.add_special_tokens([EOS])  # found in vocab.json: keeps its id
    return hf


@pytest.fixture(scope="module")
def sample() -> list[str]:
    return wt2_lines("train", 5000)


@pytest.fixture(scope="module")
def trained(sample) -> ByteLevelBPE:
    return ByteLevelBPE.train(sample, vocab_size=2000)


@pytest.fixture(scope="module")
def saved(trained, tmp_path_factory):
    return trained.save(tmp_path_factory.mktemp("bpe") / "vocab.json")


# ---------------------------------------------------------------- the byte alphabet and pre-tokenisation
def test_byte_alphabet_is_gpt2s():
    m = bytes_to_unicode()
    assert sorted(m) == list(range(256)) and len(set(m.values())) == 256
    assert all(m[b] == chr(b) for b in b"!~aZ09\xa1\xac\xae\xff")  # printable bytes stand for themselves
    assert (m[0], m[ord(" ")], m[ord("\n")], m[127], m[160], m[173]) == ("Ā", "Ġ", "Ċ", "ġ", "ł", "Ń")
    assert all(c.isprintable() and not c.isspace() for c in m.values())


def test_pre_tokenisation():
    bpe = ByteLevelBPE.train(["x"], vocab_size=257)
    assert bpe.pre_tokenize("I'm   here, don't\n\nok 123abc  ") == [
        "I", "'m", "  ", " here", ",", " don", "'t", "\n", "\n", "ok", " 123", "abc", "  "]  # a space (or \n) is
    # left to the next word: "   here" -> "  ", " here"
    assert bpe.pre_tokenize("a<|endoftext|> b") == ["a", EOS, " b"]
    assert r"\p{L}" in PATTERN


# ---------------------------------------------------------------- training
def test_training_layout_and_ties():
    bpe = ByteLevelBPE.train(["ab cd"], vocab_size=300, min_frequency=1)
    # every pair occurs once: ties go to the smallest ids -- bytes by their character ('a' < 'c' < 'Ġ'), then merges
    assert bpe.merges == [("a", "b"), ("c", "d"), ("Ġ", "cd")]
    assert len(bpe) == 256 + 3 + 1  # stopped early: no pair left
    vocab = bpe.vocab
    assert [bpe.id_to_token(i) for i in range(3)] == ["!", '"', "#"]  # GPT-2's vocab.json order
    assert sorted(vocab, key=vocab.get)[:256] == sorted(bytes_to_unicode().values())
    assert bpe.id_to_token(256) == "ab" and bpe.special_ids == {EOS: 259} and bpe.eos_id == 259  # specials last


def test_training_fills_the_vocabulary(trained, sample):
    assert len(trained) == 2000 and len(trained.merges) == 2000 - 256 - 1
    assert trained.special_ids == {EOS: 1999}
    assert trained.merges[:2] == [("Ġ", "t"), ("h", "e")]  # " the" is the most frequent word
    assert trained.tokens(" the") == ["Ġthe"]
    assert sum(map(len, trained.encode_batch(sample[:200]))) < 0.5 * sum(len(s.encode()) for s in sample[:200])


def test_training_matches_hugging_face(sample):
    """Hugging Face's BpeTrainer picks the most frequent pair with ties to the smallest pair of ids, its ids being
    ours shifted by the special tokens it puts first: the same merges in the same order, the same vocabulary."""
    ours = ByteLevelBPE.train(sample, vocab_size=1500)
    hf = hf_trained(sample, vocab_size=1500)
    assert ours.merges == hf_merges(hf)
    shift = len(ours.special_tokens)
    assert {t: i + shift for t, i in ours.vocab.items() if t != EOS} == {t: i for t, i in hf.get_vocab().items()
                                                                         if t != EOS}


CORPUS_CHARS = st.sampled_from(list("aab  c1'é😀\n") + ["<|endoftext|>"])
CORPUS = st.lists(st.lists(CORPUS_CHARS, max_size=30).map("".join), min_size=1, max_size=8)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(CORPUS, st.integers(0, 40), st.integers(1, 3))
def test_training_matches_hugging_face_on_any_corpus(corpus, extra, min_frequency):
    """Small corpora full of ties, runs of one character ("aaaa": overlapping pairs) and multi-byte characters;
    special tokens in the text are left out of training (Hugging Face's trainer would learn from them)."""
    ours = ByteLevelBPE.train(corpus, vocab_size=257 + extra, min_frequency=min_frequency)
    plain = [part for text in corpus for part in text.split(EOS)]
    hf = hf_trained(plain, vocab_size=257 + extra, min_frequency=min_frequency)
    assert ours.merges == hf_merges(hf)
    assert len(ours) == hf.get_vocab_size()


def _brute_force_merges(words: Counter, n: int, min_frequency: int) -> list[tuple[str, str]]:
    """BPE by brute force (Sennrich et al. 2016, Fig. 1): recount every pair, merge the most frequent one (ties:
    smallest ids, with the bytes first in GPT-2's order and merged tokens in the order learned)."""
    order = {c: i for i, c in enumerate(sorted(bytes_to_unicode().values()))}
    segs = {w: list(w) for w in words}
    merges = []
    while len(merges) < n:
        pairs: Counter = Counter()
        for w, seg in segs.items():
            for p in zip(seg, seg[1:]):
                pairs[p] += words[w]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], order[p[0]], order[p[1]]))
        if pairs[best] < min_frequency:
            break
        merges.append(best)
        order.setdefault(best[0] + best[1], len(order))
        for w, seg in segs.items():
            out, i = [], 0
            while i < len(seg):
                if i + 1 < len(seg) and (seg[i], seg[i + 1]) == best:
                    out.append(best[0] + best[1])
                    i += 2
                else:
                    out.append(seg[i])
                    i += 1
            segs[w] = out
    return merges


@FAST
@given(CORPUS, st.integers(0, 30), st.integers(1, 3))
def test_training_matches_brute_force(corpus, extra, min_frequency):
    ours = ByteLevelBPE.train(corpus, vocab_size=257 + extra, min_frequency=min_frequency)
    to_char = bytes_to_unicode()
    words = Counter("".join(to_char[b] for b in piece.encode()) for text in corpus for part in text.split(EOS)
                    for piece in ours.pre_tokenize(part))
    assert ours.merges == _brute_force_merges(words, extra, min_frequency)[:len(ours.merges)]
    assert len(ours.merges) == extra or _brute_force_merges(words, extra + 1, min_frequency) == ours.merges


def test_special_tokens_are_not_learned_from():
    bpe = ByteLevelBPE.train([f"a{EOS}b {EOS}"] * 50, vocab_size=400, min_frequency=1)
    assert not any("end" in t or "<|" in t for t in bpe.vocab if t != EOS)
    assert bpe.tokens(f"a{EOS}b") == ["a", EOS, "b"]


def test_train_arguments():
    with pytest.raises(TypeError, match="one str"):
        ByteLevelBPE.train("some text", vocab_size=300)
    with pytest.raises(ValueError, match="cannot hold the 256 byte tokens"):
        ByteLevelBPE.train(["x"], vocab_size=256)
    with pytest.raises(ValueError, match="<|name|>"):
        ByteLevelBPE.train(["x"], vocab_size=300, special_tokens=("<pad>",))
    with pytest.raises(ValueError, match="duplicates"):
        ByteLevelBPE.train(["x"], vocab_size=300, special_tokens=(EOS, EOS))
    with pytest.raises(ValueError, match="min_frequency"):
        ByteLevelBPE.train(["x"], vocab_size=300, min_frequency=0)
    assert ByteLevelBPE.train(["aa"], vocab_size=300, special_tokens=()).special_ids == {}


# ---------------------------------------------------------------- encoding: Hugging Face reading our files
@needs_wt2
def test_hugging_face_reads_our_files_and_encodes_the_same(trained, hf_ours):
    hf = hf_ours
    valid = wt2_lines("valid")
    for texts in (valid, TRICKY, ["\n".join(valid[:300])]):
        theirs = [e.ids for e in hf.encode_batch(texts)]
        assert trained.encode_batch(texts) == theirs
        for text, ids in zip(texts, theirs):
            assert trained.decode(ids) == text
    assert trained.tokens("Hello world") == hf.encode("Hello world").tokens


@needs_wt2
def test_we_read_hugging_faces_files_and_encode_the_same(sample, tmp_path):
    hf = hf_trained(sample[:2000], vocab_size=800)
    hf.save_model(str(tmp_path))
    ours = ByteLevelBPE.load(tmp_path)
    assert ours.special_ids == {EOS: 0}  # Hugging Face puts the special tokens first
    assert ours.encode_batch(TRICKY + sample[2000:2300]) == [e.ids for e in hf.encode_batch(TRICKY + sample[2000:2300])]


TEXT = st.text(max_size=80)  # any Unicode except lone surrogates
MIXED = st.lists(st.sampled_from(list(string.printable) + list("éü中文😀\u200b\x00\u00a0\u2028Ġ") + [EOS, "<|", "|>"]),
                 max_size=60).map("".join)


@pytest.fixture(scope="module")
def hf_ours(saved) -> ByteLevelBPETokenizer:
    return hf_reading(saved)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(TEXT, MIXED))
def test_decode_inverts_encode_and_hugging_face_agrees(trained, hf_ours, text):
    ids = trained.encode(text)
    assert trained.decode(ids) == text
    assert ids == hf_ours.encode(text).ids
    assert [trained.id_to_token(i) for i in ids] == trained.tokens(text)


# ---------------------------------------------------------------- special tokens, lookups, errors
def test_special_tokens_kept_whole(trained):
    eos = trained.eos_id
    ids = trained.encode(f"a{EOS}b  {EOS}{EOS}\n")
    assert ids.count(eos) == 3 and ids[1] == eos
    assert trained.tokens(f"x{EOS}y")[1] == EOS
    assert trained.decode([eos]) == EOS and trained.decode(ids) == f"a{EOS}b  {EOS}{EOS}\n"
    assert eos not in trained.encode("<|endoftext| <|endoftext |> endoftext")  # not the special token
    no_specials = ByteLevelBPE(trained.vocab, trained.merges, special_tokens=())
    assert eos not in no_specials.encode(EOS) and no_specials.decode(no_specials.encode(EOS)) == EOS


def test_lookups_and_errors(trained):
    assert trained.token_to_id("Ġthe") == trained.encode(" the")[0]
    assert trained.id_to_token(trained.token_to_id("Ġthe")) == "Ġthe"
    with pytest.raises(KeyError, match="not in the vocabulary.*byte alphabet"):
        trained.token_to_id(" the")
    for bad in (len(trained), -1, 10**9):
        with pytest.raises(ValueError, match=f"id {bad} is not in the vocabulary"):
            trained.decode([5, bad])
        with pytest.raises(ValueError, match=f"id {bad} is not in the vocabulary"):
            trained.id_to_token(bad)
    with pytest.raises(TypeError, match="integers"):
        trained.decode([1.5])
    with pytest.raises(ValueError, match="lone surrogate"):
        trained.encode("a\ud800b")
    with pytest.raises(TypeError, match="one str"):
        trained.encode_batch("text")
    assert trained.decode(trained.encode("😀")[:1]) == "\ufffd"  # a cut character: replaced, as GPT-2 does
    with pytest.raises(UnicodeDecodeError):
        trained.decode(trained.encode("😀")[:1], errors="strict")
    torch = pytest.importorskip("torch")
    assert trained.decode(torch.tensor(trained.encode("tensor ids"))) == "tensor ids"
    with pytest.raises(KeyError, match="no <|endoftext|>"):
        _ = ByteLevelBPE(trained.vocab, trained.merges, special_tokens=()).eos_id


def test_constructor_errors(trained):
    vocab, merges = trained.vocab, trained.merges
    with pytest.raises(ValueError, match="lacks 1 of the 256 byte tokens"):
        ByteLevelBPE({t: i for t, i in vocab.items() if t != "Ġ"} | {"Ġ_": vocab["Ġ"]}, [])
    with pytest.raises(ValueError, match="'zz' is not in the vocabulary"):
        ByteLevelBPE(vocab, merges + [("z", "z")])
    with pytest.raises(ValueError, match="neither written in the byte alphabet"):
        ByteLevelBPE(vocab | {"€": len(vocab)}, merges)
    with pytest.raises(ValueError, match="ids .* must be the integers"):
        ByteLevelBPE(vocab | {"new": len(vocab) + 1}, merges)
    with pytest.raises(ValueError, match="special tokens .* are not in the vocabulary"):
        ByteLevelBPE(vocab, merges, special_tokens=["<|pad|>"])


# ---------------------------------------------------------------- files
def test_save_load_round_trip(trained, saved, tmp_path):
    assert saved.name == "vocab.json"
    lines = saved.with_name("merges.txt").read_text(encoding="utf-8").split("\n")
    assert lines[0] == "#version: 0.2" and lines[-1] == "" and len(lines) == len(trained.merges) + 2
    assert [tuple(line.split(" ")) for line in lines[1:-1]] == trained.merges
    assert json.loads(saved.read_text(encoding="utf-8")) == trained.vocab  # special tokens are plain entries
    text = f"Round trip: Ünïcödé 😀 {EOS} 1990s\n"
    for where in (saved, saved.parent):
        back = ByteLevelBPE.load(where)
        assert back.vocab == trained.vocab and back.merges == trained.merges
        assert back.special_ids == trained.special_ids and back.encode(text) == trained.encode(text)
    folder = trained.save(tmp_path / "tok")  # a name without suffix: a folder
    assert folder == tmp_path / "tok" / "vocab.json"
    assert sorted(p.name for p in folder.parent.iterdir()) == ["merges.txt", "vocab.json"]  # no temporary file
    assert trained.save(tmp_path / "tok").read_bytes() == saved.read_bytes()


def _files(tmp_path, vocab: str, merges: str):
    folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    (folder / "vocab.json").write_text(vocab, encoding="utf-8")
    (folder / "merges.txt").write_text(merges, encoding="utf-8")
    return folder / "vocab.json"


def test_malformed_files(tmp_path):
    base = {c: i for i, c in enumerate(sorted(bytes_to_unicode().values()))}
    vocab = json.dumps(base | {"ab": 256, "Ġab": 257, EOS: 258})
    good = "#version: 0.2\na b\nĠ ab\n"
    assert ByteLevelBPE.load(_files(tmp_path, vocab, good)).special_ids == {EOS: 258}
    assert ByteLevelBPE.load(_files(tmp_path, vocab, "a b\r\nĠ ab\r\n")).merges == [("a", "b"), ("Ġ", "ab")]
    cases = [
        (vocab, "#version: 0.2\na b\nĠ ab c\n", r"merges.txt, line 3: expected two tokens"),
        (vocab, "#version: 0.2\na b\n\nĠ ab\n", r"merges.txt, line 3: expected two tokens"),
        (vocab, "#version: 0.2\na  b\n", r"merges.txt, line 2: expected two tokens"),
        (vocab, "#version: 0.2\na b\nĠ a\n", r"merges.txt, line 3: 'Ġa' .* is not in vocab.json"),
        (vocab, "#version: 0.2\nab c\n", r"merges.txt, line 2: 'abc' .* is not in vocab.json"),
        (vocab, "#version: 0.2\nx€ b\n", r"merges.txt, line 2: 'x€' .* is not in vocab.json"),
        ('{"a": 0,\n "b": 1,,}', good, r"vocab.json, line 2, column 9: not valid JSON"),
        ("[1, 2]", good, r"vocab.json: vocab.json must be a non-empty JSON object"),
        ('{"a": 0, "a": 1}', good, r"vocab.json: the token 'a' is listed twice"),
        (json.dumps(base | {"ab": "256"}), "a b\n", r"vocab.json: .*'ab' has id '256'"),
        (json.dumps(base | {"ab": 256, "Ġab": 258}), good, r"vocab.json: .*must be the integers 0..257; 'Ġab' has"),
        (json.dumps(base | {"ab": 256, "Ġab": 256}), good, r"vocab.json: id 256 is given to both 'ab' and 'Ġab'"),
        (json.dumps({k: v for k, v in base.items() if k != "a"} | {"ab": base["a"], "Ġab": 256, "a2": 257}), good,
         r"merges.txt, line 2: 'a' .* is not in vocab.json"),
        (json.dumps({k: v for k, v in base.items() if k != "!"} | {"!!": 0}), "", r"lacks 1 of the 256 byte tokens"),
        (vocab, f"#version: 0.2\n{EOS} a\n", r"merges.txt, line 2: '<\|endoftext\|>a' .* is not in vocab.json"),
        (json.dumps(base | {"ab": 256, EOS: 257, EOS + "a": 258}), f"a b\n{EOS} a\n",
         r"vocab.json: the merge '<\|endoftext\|>' 'a' joins a special token"),
    ]
    for vocab_text, merges_text, message in cases:
        with pytest.raises(VocabFileError, match=message):
            ByteLevelBPE.load(_files(tmp_path, vocab_text, merges_text))
    path = _files(tmp_path, vocab, good)
    path.with_name("merges.txt").unlink()
    with pytest.raises(FileNotFoundError, match="no merges.txt"):
        ByteLevelBPE.load(path)
    with pytest.raises(FileNotFoundError, match="no vocab.json"):
        ByteLevelBPE.load(tmp_path / "nowhere")
