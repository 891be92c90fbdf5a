"""shoulders.text.Vocab: ordering, min_freq/max_size, specials, unk, encode/decode, save/load."""
from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest
import torch

from shoulders.text import Vocab, VocabFileError, count_tokens

LINES = [["b", "a", "c", "a"], ["d", "b", "a"], ["e"], []]  # a:3 b:2 c:1 d:1 e:1


def test_order_is_count_desc_then_token_asc():
    v = Vocab.build(LINES, unk=None)
    assert v.tokens == ["a", "b", "c", "d", "e"]
    assert [v[t] for t in v.tokens] == list(range(5))


def test_ties_are_broken_by_code_point_order():
    counts = Counter({"ba": 2, "ab": 2, "b": 2, "Zeta": 2, "alpha": 2, "é": 2, "top": 5, "rare": 1})
    assert Vocab.build(counts, unk=None).tokens == ["top", "Zeta", "ab", "alpha", "b", "ba", "é", "rare"]


def test_order_is_deterministic_whatever_the_corpus_order():
    flat = [t for line in LINES for t in line] * 3
    vocabs = set()
    for s in range(5):
        random.Random(s).shuffle(flat)
        vocabs.add(tuple(Vocab.build(flat).tokens))
    assert len(vocabs) == 1


def test_sources_counter_flat_lines_generator_agree():
    flat = [t for line in LINES for t in line]
    a = Vocab.build(LINES)
    assert a == Vocab.build(flat) == Vocab.build(Counter(flat)) == Vocab.build(iter(LINES))
    assert a == Vocab.build(tuple(x) for x in LINES)
    assert a.counts["a"] == 3 and a.counts["<unk>"] == 0


def test_bare_string_is_refused():
    with pytest.raises(TypeError, match="str"):
        Vocab.build("a b c")
    with pytest.raises(TypeError):
        count_tokens([["a"], "b"])


def test_specials_first_in_given_order_and_unk_placement():
    v = Vocab.build(LINES, specials=["<pad>", "<eos>"])  # unk not among specials -> put first
    assert v.tokens[:3] == ["<unk>", "<pad>", "<eos>"] and v.specials == ("<unk>", "<pad>", "<eos>")
    v = Vocab.build(LINES, specials=["<pad>", "<unk>", "<eos>"])  # unk among specials -> stays where given
    assert v.tokens[:4] == ["<pad>", "<unk>", "<eos>", "a"] and v.unk_id == 1
    v = Vocab.build(LINES, specials=["<pad>"], unk=None)
    assert v.tokens[0] == "<pad>" and "<unk>" not in v and v.unk_id is None


def test_special_that_occurs_in_the_corpus_is_not_duplicated_and_keeps_its_count():
    v = Vocab.build([["<eos>", "x", "<eos>", "<unk>"]], specials=["<eos>"])
    assert v.tokens == ["<unk>", "<eos>", "x"]
    assert v.counts["<eos>"] == 2 and v.counts["<unk>"] == 1


def test_min_freq_and_max_size():
    assert Vocab.build(LINES, min_freq=2, unk=None).tokens == ["a", "b"]
    assert Vocab.build(LINES, min_freq=4, specials=["<pad>"]).tokens == ["<unk>", "<pad>"]  # specials always kept
    v = Vocab.build(LINES, specials=["<pad>"], max_size=4)  # size includes the specials
    assert v.tokens == ["<unk>", "<pad>", "a", "b"]
    with pytest.raises(ValueError, match="max_size"):
        Vocab.build(LINES, specials=["<pad>"], max_size=1)
    with pytest.raises(ValueError):
        Vocab.build(LINES, min_freq=0)
    with pytest.raises(ValueError, match="duplicate"):
        Vocab.build(LINES, specials=["<pad>", "<pad>"])


def test_unknown_tokens_map_to_unk():
    v = Vocab.build(LINES, specials=["<pad>"])
    assert "zzz" not in v and "a" in v
    assert v["zzz"] == v.unk_id == 0
    assert v.encode(["a", "zzz", "e"]) == [2, 0, 6]
    np.testing.assert_array_equal(v.encode_array(["a", "zzz", "e"]), [2, 0, 6])


def test_unknown_token_without_unk_is_a_clear_key_error():
    v = Vocab.build(LINES, unk=None)
    for call in (lambda: v["zzz"], lambda: v.encode(["a", "zzz"]), lambda: v.encode_array(["a", "zzz"]),
                 lambda: v.encode_array(iter(["zzz"]))):
        with pytest.raises(KeyError, match="zzz") as err:
            call()
        assert "unk" in str(err.value)


def test_encode_array_matches_encode_and_is_int64():
    v = Vocab.build(LINES)
    toks = ["a", "q", "e", "b"] * 50
    arr = v.encode_array(toks)
    assert arr.dtype == np.int64 and arr.shape == (200,)
    assert arr.tolist() == v.encode(toks) == v.encode_array(iter(toks)).tolist()
    assert v.encode_array([]).shape == (0,)
    with pytest.raises(TypeError):
        v.encode("abc")


def test_decode_and_lookup_token():
    v = Vocab.build(LINES, specials=["<pad>"])
    ids = v.encode(["a", "b", "e"])
    assert v.decode(ids) == ["a", "b", "e"]
    assert v.decode(torch.tensor(ids)) == v.decode(np.array(ids)) == ["a", "b", "e"]
    assert v.lookup_token(0) == "<unk>" and v.lookup_token(len(v) - 1) == v.tokens[-1]
    for bad in (len(v), -1):
        with pytest.raises(IndexError):
            v.lookup_token(bad)
        with pytest.raises(IndexError):
            v.decode([bad])


def test_count_array_is_in_id_order():
    v = Vocab.build(LINES, specials=["<pad>"])
    assert v.count_array().tolist() == [0, 0, 3, 2, 1, 1, 1]


@pytest.mark.parametrize("unk", ["<unk>", None])
def test_save_load_round_trip(tmp_path, unk):
    weird = ['"quoted"', "back\\slash", "new\nline", "tab\there", " ", "", "日本語", "ça", "🙂", "null", "<unk>x"]
    corpus = [weird, ["a", "a", "日本語"]]
    v = Vocab.build(corpus, specials=["<pad>", "<eos>"], unk=unk)
    path = v.save(tmp_path / "sub" / "vocab.json")
    w = Vocab.load(path)
    assert w == v
    assert w.tokens == v.tokens and w.specials == v.specials and w.unk == v.unk and w.counts == v.counts
    assert w.encode(weird) == v.encode(weird)
    data = json.loads(path.read_text(encoding="utf-8"))  # plain JSON, readable
    assert data["tokens"][len(v.specials)] == ["a", 2] and data["specials"] == list(v.specials)
    assert "日本語" in path.read_text(encoding="utf-8")  # not \u-escaped
    assert not [p for p in path.parent.iterdir() if p.name != "vocab.json"]  # no temporary left behind


def _saved(tmp_path) -> tuple:
    path = Vocab.build(LINES, specials=["<pad>"]).save(tmp_path / "v.json")
    return path, json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("corrupt", [
    lambda d: "not json at all {",
    lambda d: json.dumps({"hello": "world"}),  # foreign JSON
    lambda d: json.dumps([1, 2, 3]),
    lambda d: json.dumps({**d, "version": 99}),
    lambda d: json.dumps({**d, "size": d["size"] + 1}),  # truncated
    lambda d: json.dumps({**d, "unk": "<nope>"}),
    lambda d: json.dumps({**d, "specials": ["a"]}),  # not a prefix
    lambda d: json.dumps({**d, "tokens": d["tokens"][:2] + d["tokens"][:2], "size": 4}),  # duplicates
    lambda d: json.dumps({**d, "tokens": [["a", -1]], "size": 1, "specials": [], "unk": None}),
    lambda d: json.dumps({**d, "tokens": [["a"]], "size": 1, "specials": [], "unk": None}),
    lambda d: json.dumps({k: v for k, v in d.items() if k != "specials"}),
])
def test_corrupt_or_foreign_file_is_a_clear_error(tmp_path, corrupt):
    path, data = _saved(tmp_path)
    path.write_text(corrupt(data), encoding="utf-8")
    with pytest.raises(VocabFileError, match=str(path.name)):
        Vocab.load(path)


def test_truncated_and_binary_files(tmp_path):
    path, _ = _saved(tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(VocabFileError):
        Vocab.load(path)
    path.write_bytes(b"\x80\x81\xff\x00")
    with pytest.raises(VocabFileError):
        Vocab.load(path)
    assert issubclass(VocabFileError, ValueError)
