"""The corpus readers of shoulders.data: WikiText-2 counts (from the offline mirror) and the line convention."""
from __future__ import annotations

import pytest

import shoulders.data.provide
from shoulders.data import mirror_folder, multi30k, tiny_shakespeare, wikitext2
from shoulders.text import Vocab, lm_stream

WT2 = mirror_folder("wikitext-2")  # SHOULDERS_DATA_MIRROR/wikitext-2, or None
SHAKESPEARE = mirror_folder("tiny-shakespeare")
MIRROR_HINT = "set SHOULDERS_DATA_MIRROR to the book's shared/data folder"
needs_wt2 = pytest.mark.skipif(WT2 is None, reason=f"no WikiText-2 in the offline mirror: {MIRROR_HINT}")


@pytest.fixture(scope="module")
def wt2() -> dict[str, list[list[str]]]:
    return {split: wikitext2(split, root=WT2) for split in ("train", "valid", "test")}


@needs_wt2
def test_wikitext2_token_and_line_counts(wt2):
    counts = {s: (len(lines), sum(map(len, lines))) for s, lines in wt2.items()}
    assert counts == {"train": (36_718, 2_088_628), "valid": (3_760, 217_646), "test": (4_358, 245_569)}
    assert all(line[-1] == "<eos>" for lines in wt2.values() for line in lines)
    assert wt2["train"][0] == ["<eos>"]  # the file starts with an empty line
    assert wt2["train"][1] == ["=", "Valkyria", "Chronicles", "III", "=", "<eos>"]


@needs_wt2
def test_wikitext2_vocabulary_is_closed(wt2):
    vocab = Vocab.build(wt2["train"], specials=["<eos>"], unk=None)
    assert len(vocab) == 33_278 and "<unk>" in vocab  # the paper's vocabulary; <unk> is already in the text
    for split in ("valid", "test"):  # WikiText has no out-of-vocabulary tokens: encoding never falls back
        assert len(lm_stream(wt2[split], vocab)) == sum(map(len, wt2[split]))


@needs_wt2
def test_wikitext2_without_eos():
    lines = wikitext2("valid", root=WT2, eos=None)
    assert len(lines) == 3_760 and sum(map(len, lines)) == 217_646 - 3_760 and lines[0] == []


def test_wikitext2_line_convention_on_a_small_file(tmp_path):
    (tmp_path / "wiki.valid.tokens").write_text(" \n = Title = \n \n a b\tc \n", encoding="utf-8")
    assert wikitext2("valid", root=tmp_path) == [["<eos>"], ["=", "Title", "=", "<eos>"], ["<eos>"],
                                                 ["a", "b", "c", "<eos>"]]
    (tmp_path / "wiki.test.tokens").write_text("x y\n\nz", encoding="utf-8")  # no final newline
    assert wikitext2("test", root=tmp_path) == [["x", "y", "<eos>"], ["<eos>"], ["z", "<eos>"]]
    (tmp_path / "wiki.train.tokens").write_text("a\u2028b\n", encoding="utf-8")  # only \n ends a line
    assert len(wikitext2("train", root=tmp_path)) == 1


def test_wikitext2_errors(tmp_path):
    with pytest.raises(ValueError, match="split"):
        wikitext2("dev", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="wiki.train.tokens"):
        wikitext2("train", root=tmp_path)
    with pytest.raises(FileNotFoundError):
        wikitext2("train", root=tmp_path / "nowhere")


@pytest.mark.skipif(SHAKESPEARE is None, reason=f"no Tiny Shakespeare in the offline mirror: {MIRROR_HINT}")
def test_tiny_shakespeare():
    text = tiny_shakespeare(root=SHAKESPEARE)
    assert len(text) == 1_115_394 and text.startswith("First Citizen:\n")
    assert len(set(text)) == 65  # Karpathy's char-rnn vocabulary


def test_default_root_comes_from_the_registry_entry(tmp_path, monkeypatch):
    (tmp_path / "wiki.valid.tokens").write_text(" a b \n", encoding="utf-8")
    (tmp_path / "input.txt").write_text("To be", encoding="utf-8")
    asked = []  # the readers ask for their own registry entry's folder (cache, mirror or download)
    monkeypatch.setattr(shoulders.data.provide, "provide", lambda entry, **kw: asked.append(entry.name) or tmp_path)
    assert wikitext2("valid") == [["a", "b", "<eos>"]]
    assert tiny_shakespeare() == "To be"
    assert asked == ["wikitext-2", "tiny-shakespeare"]


@pytest.mark.skipif(mirror_folder("multi30k") is None, reason=f"no Multi30k in the offline mirror: {MIRROR_HINT}")
def test_multi30k_sides_are_parallel_and_have_the_published_sizes():
    root = mirror_folder("multi30k")
    for split, n in (("train", 29_000), ("valid", 1_014), ("test", 1_000)):
        en, de = multi30k(split, "en", root=root), multi30k(split, "de", root=root)
        assert len(en) == len(de) == n, split
        assert all(en) and all(de)
    assert multi30k("train", "en", root=root)[0].startswith("Two young, White males are outside")
    with pytest.raises(ValueError, match="split"):
        multi30k("dev")
    with pytest.raises(ValueError, match="lang"):
        multi30k("train", "fr")
