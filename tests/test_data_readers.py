"""The readers beside the registry entries that tests/test_tasks.py and tests/test_text_corpus.py do not cover:
SST trees, Tatoeba, IMDb, text8, WikiText-103 and the training splits of SNLI and SQuAD -- on the offline mirror
where it holds them, on small files in the real layout where it does not (the ``full``-scale corpora), and the
error a ``full``-only reader gives offline (no network is used: the download itself is replaced)."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

import shoulders.data.remote
from shoulders.data import (
    IMDB_SPLITS, DownloadError, imdb, mirror_folder, snli, squad, sst2, sst_trees, tatoeba_fra_eng, text8, wikitext2,
    wikitext103,
)

HINT = "set SHOULDERS_DATA_MIRROR to the book's shared/data folder"


def _needs(*names: str):
    missing = [n for n in names if mirror_folder(n) is None]
    return pytest.mark.skipif(bool(missing), reason=f"no {', '.join(missing)} in the offline mirror: {HINT}")


# ------------------------------------------------------------------------------------------------ SST trees
@_needs("sst-trees")
def test_sst_trees_counts_labels_and_escapes():
    root = mirror_folder("sst-trees")
    five = {s: sst_trees(s, root=root) for s in ("train", "dev", "test")}
    two = {s: sst_trees(s, root=root, binary=True) for s in ("train", "dev", "test")}
    assert {s: len(x) for s, (x, _) in five.items()} == {"train": 8_544, "dev": 1_101, "test": 2_210}
    assert {s: len(x) for s, (x, _) in two.items()} == {"train": 6_920, "dev": 872, "test": 1_821}
    assert all(set(y) == {0, 1, 2, 3, 4} for _, y in five.values()) and all(set(y) == {0, 1} for _, y in two.values())
    assert five["dev"][0][0] == "It 's a lovely film with lovely performances by Buy and Accorsi ."
    assert five["dev"][1][0] == 3
    assert not any(t in s for x, _ in five.values() for s in x for t in ("-LRB-", "-RRB-", "\\/", "\\*"))
    with pytest.raises(ValueError, match="split"):
        sst_trees("valid", root=root)


@_needs("sst-trees", "sst2-glue")
def test_binary_sst_dev_is_glue_sst2_dev():
    glue = dict(zip(*sst2("dev", root=mirror_folder("sst2-glue"))))
    sentences, labels = sst_trees("dev", root=mirror_folder("sst-trees"), binary=True)
    assert {s.lower(): y for s, y in zip(sentences, labels)} == glue


def test_sst_trees_on_small_trees(tmp_path: Path):
    (tmp_path / "test.txt").write_text("(1 (2 -LRB-) (1 (0 Awful) (2 (2 \\/) (2 -RRB-))))\n(2 (2 meh))\n\n"
                                       "(4 (4 \\*great\\*))\n", encoding="utf-8")
    assert sst_trees("test", root=tmp_path) == (["( Awful / )", "meh", "*great*"], [1, 2, 4])
    assert sst_trees("test", root=tmp_path, binary=True) == (["( Awful / )", "*great*"], [0, 1])
    (tmp_path / "dev.txt").write_text("not a tree\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a labelled tree"):
        sst_trees("dev", root=tmp_path)


# ---------------------------------------------------------------------------------------------------- Tatoeba
@_needs("tatoeba-fra-eng")
def test_tatoeba_pairs():
    pairs = tatoeba_fra_eng(root=mirror_folder("tatoeba-fra-eng"))
    assert len(pairs) == 167_130 and pairs[0] == ("Go.", "Va !")
    assert all(english and french for english, french in pairs)


# ------------------------------------------------------------------------------------------------------- IMDb
def _imdb_archive(folder: Path) -> None:
    """A tiny aclImdb_v1.tar.gz with the real layout (and the files the reader must skip)."""
    files = {"aclImdb/README": "read me", "aclImdb/imdb.vocab": "the\na\n", "aclImdb/train/urls_pos.txt": "http://x/",
             "aclImdb/train/pos/10_9.txt": "Great.<br />Yes.", "aclImdb/train/neg/5_1.txt": "Bad.",
             "aclImdb/train/pos/2_8.txt": "Good.", "aclImdb/test/neg/0_2.txt": "Meh.",
             "aclImdb/train/unsup/7_0.txt": "Who knows."}
    with tarfile.open(folder / "aclImdb_v1.tar.gz", "w:gz") as archive:
        for name, text in files.items():
            blob = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            archive.addfile(info, io.BytesIO(blob))


def test_imdb_reads_the_reviews_out_of_the_archive(tmp_path: Path):
    _imdb_archive(tmp_path)
    assert imdb("train", root=tmp_path) == (["Bad.", "Good.", "Great.<br />Yes."], [0, 1, 1])  # neg, then pos by id
    assert imdb("test", root=tmp_path) == (["Meh."], [0])
    assert imdb("unsup", root=tmp_path) == (["Who knows."], [-1])
    assert IMDB_SPLITS == ("train", "test", "unsup")
    with pytest.raises(ValueError, match="split"):
        imdb("dev", root=tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"aclImdb_v1\.tar\.gz is missing"):
        imdb("train", root=tmp_path / "empty")


# ----------------------------------------------------------------------------------- text8 and WikiText-103
def test_text8_comes_in_lines_of_words(tmp_path: Path):
    (tmp_path / "text8").write_text(" anarchism originated as a term of abuse", encoding="ascii")
    assert text8(root=tmp_path, line_words=3) == [["anarchism", "originated", "as"], ["a", "term", "of"], ["abuse"]]
    assert len(text8(root=tmp_path)) == 1
    with pytest.raises(ValueError, match="line_words"):
        text8(root=tmp_path, line_words=0)


def test_wikitext103_has_wikitext2s_line_convention(tmp_path: Path):
    (tmp_path / "wiki.valid.tokens").write_text(" \n = Title = \n a b \n", encoding="utf-8")
    expected = [["<eos>"], ["=", "Title", "=", "<eos>"], ["a", "b", "<eos>"]]
    assert wikitext103("valid", root=tmp_path) == wikitext2("valid", root=tmp_path) == expected
    with pytest.raises(ValueError, match="split"):
        wikitext103("dev", root=tmp_path)


# ------------------------------------------------------------------------------------- the training splits
def test_squad_train_reads_the_training_file(tmp_path: Path):
    article = {"title": "T", "paragraphs": [{"context": "A b c.", "qas": [
        {"id": "q1", "question": "What?", "answers": [{"text": "b", "answer_start": 2}]}]}]}
    (tmp_path / "train-v1.1.json").write_text(json.dumps({"data": [article], "version": "1.1"}), encoding="utf-8")
    assert squad("train", root=tmp_path) == [{"title": "T", "paragraphs": [{"context": "A b c.", "qas": [
        {"id": "q1", "question": "What?", "answers": ["b"], "answer_starts": [2]}]}]}]


@pytest.mark.parametrize("read", [lambda: imdb("train"), lambda: text8(), lambda: wikitext103("valid"),
                                  lambda: snli("train"), lambda: squad("train")],
                         ids=["imdb", "text8", "wikitext-103", "snli-train", "squad-v1.1-train"])
def test_full_only_reader_offline_says_which_scale_needs_it(read, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def offline(entry, url, target):
        raise DownloadError(f"{entry.name}: could not connect to {url} (offline, or the server is down: test)")

    monkeypatch.setattr(shoulders.data.remote, "http_get", offline)  # every download fails as it does offline
    monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "cache"))
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(mirror_folder("wikitext-2").parent if mirror_folder("wikitext-2")
                                                    else tmp_path / "mirror"))
    with pytest.raises(DownloadError, match=r"is needed only at SHOULDERS_SCALE=full \(chapter.*\); it is not in "
                                            "the offline mirror"):
        read()
    kept = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # only the dataset's empty lock file
    assert all(p.parent == tmp_path / "cache" and p.name.endswith(".lock") and not p.stat().st_size for p in kept)
