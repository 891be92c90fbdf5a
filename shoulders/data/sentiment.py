"""The book's sentiment data -- registry entries and readers side by side.

* SST-2 as packaged by GLUE (Socher et al. 2013; Wang et al. 2019): binary sentences -- :func:`sst2`;
* the Stanford Sentiment Treebank's PTB trees (SST-5): a 0-4 label on every phrase -- :func:`sst_trees` (whole
  sentences with their root label, or the binary SST-2 sentences derived from them);
* IMDb, the Large Movie Review Dataset (Maas et al. 2011; ``full`` scale only): ULMFiT's reviews -- :func:`imdb`.

Readers take an optional ``root`` folder; without it the files come from :func:`shoulders.data.path`.
"""
from __future__ import annotations

import re
import tarfile

from .entry import Checksum, Citation, Dataset, Download, LocalFile, Member
from .provide import Root, local_file

__all__ = ["IMDB", "IMDB_SPLITS", "SST2_GLUE", "SST2_LABELS", "SST_TREES", "imdb", "sst2", "sst_trees"]

SST2_LABELS = ("negative", "positive")
_SOCHER_2013 = Citation(
    authors="Richard Socher, Alex Perelygin, Jean Wu, Jason Chuang, Christopher D. Manning, Andrew Ng, "
    "Christopher Potts",
    year=2013,
    title="Recursive Deep Models for Semantic Compositionality Over a Sentiment Treebank",
    venue="EMNLP",
)

# ------------------------------------------------------------------------------------------------- SST-2 GLUE
_SST2_FILES = {
    "train": LocalFile("train.tsv", 3_806_081, "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1"),
    "dev": LocalFile("dev.tsv", 94_931, "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0"),
}

SST2_GLUE = Dataset(
    name="sst2-glue",
    title="SST-2 (GLUE version)",
    description="Binary sentence sentiment from the Stanford Sentiment Treebank as packaged by GLUE: "
    "67,349 training phrases and 872 dev sentences, header 'sentence<TAB>label'.",
    homepage="https://gluebenchmark.com/tasks",
    licence="None stated (GLUE asks users to cite the original dataset)",
    citations=(
        _SOCHER_2013,
        Citation(
            authors="Alex Wang, Amanpreet Singh, Julian Michael, Felix Hill, Omer Levy, Samuel R. Bowman",
            year=2019,
            title="GLUE: A Multi-Task Benchmark and Analysis Platform for Natural Language Understanding",
            venue="ICLR",
        ),
    ),
    files=tuple(_SST2_FILES.values()),
    downloads=(Download(
        urls=("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip",),
        filename="SST-2.zip",
        format="zip",
        checksum=Checksum("md5", "9f81648d4199384278b86e315dac217c", "torchtext datasets/sst2.py"),
        members=tuple(Member(f"SST-2/{f.name}", f.name) for f in _SST2_FILES.values()),
    ),),
    aliases=("sst2", "sst-2", "glue-sst2", "glue-sst-2"),
    notes="GLUE's unlabelled test.tsv is not kept. Mirror files equal the Git-LFS sha256 recorded for GLUE's "
    "SST-2/{train,dev}.tsv in two independent repositories.",
)

# ------------------------------------------------------------------------------------------------ SST trees
_SST_ZIP = LocalFile("trainDevTestTrees_PTB.zip", 789_539,
                     "5c613a4f673fc74097d523a2c83f38e0cc462984d847b82c7aaf36b01cbbbfcc")
_SST_TREE_FILES = {
    "train": LocalFile("train.txt", 2_160_058, "e2f3f41b0b1e6d4dddc0effe3bfc2d27ed8928079aa9a03d652311614fc5feb7"),
    "dev": LocalFile("dev.txt", 280_825, "0e9336aed6e4730e19f58d00a77b3f0297efdb755f7b5e598c98a05e3f97ea40"),
    "test": LocalFile("test.txt", 559_614, "6e54806dee95cf80cd918e7dfb3f6770f6df24bf826f289a4d1f709e1c8f6761"),
}

SST_TREES = Dataset(
    name="sst-trees",
    title="Stanford Sentiment Treebank (PTB-format trees, SST-5)",
    description="11,855 sentences as binarised parse trees with a 0-4 sentiment label on every phrase node "
    "(8,544 / 1,101 / 2,210 trees); the original zip is kept next to the extracted splits.",
    homepage="https://nlp.stanford.edu/sentiment/",
    licence="None stated in the sources examined",
    citations=(_SOCHER_2013,),
    files=(_SST_ZIP, *_SST_TREE_FILES.values()),
    downloads=(Download(
        urls=(f"http://nlp.stanford.edu/sentiment/{_SST_ZIP.name}",),
        filename=_SST_ZIP.name,
        format="zip",
        checksum=Checksum("md5", "5c3b23ce88089053fd3efeb4a34f614d", "torchtext former datasets/sst.py"),
        size=_SST_ZIP.size,
        keep_as=_SST_ZIP.name,
        members=tuple(Member(f"trees/{f.name}", f.name) for f in _SST_TREE_FILES.values()),
    ),),
    aliases=("sst", "sst5", "sst-5", "sst-ptb"),
)

# ------------------------------------------------------------------------------------------------------ IMDb
IMDB_SPLITS = ("train", "test", "unsup")
_IMDB_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"  # of the archive, kept as is
_IMDB = LocalFile("aclImdb_v1.tar.gz", 84_125_825, _IMDB_SHA256)

IMDB = Dataset(
    name="imdb",
    title="Large Movie Review Dataset (IMDb, aclImdb v1)",
    description="50,000 polar IMDb movie reviews, 25,000 for training and 25,000 for testing (half positive, "
    "half negative, at most 30 per movie), plus 50,000 unlabelled reviews; ULMFiT's sentiment task. Kept as the "
    "original archive (100,000 small text files inside).",
    homepage="https://ai.stanford.edu/~amaas/data/sentiment/",
    licence="None stated in the sources examined",
    citations=(Citation(
        authors="Andrew L. Maas, Raymond E. Daly, Peter T. Pham, Dan Huang, Andrew Y. Ng, Christopher Potts",
        year=2011,
        title="Learning Word Vectors for Sentiment Analysis",
        venue="Proceedings of ACL-HLT, pp. 142-150",
        url="https://aclanthology.org/P11-1015",
    ),),
    files=(_IMDB,),
    downloads=(Download(
        urls=(f"https://ai.stanford.edu/~amaas/data/sentiment/{_IMDB.name}",),
        filename=_IMDB.name,
        format="file",
        checksum=Checksum("sha256", _IMDB_SHA256, "Hugging Face datasets/imdb/dataset_infos.json"),
        size=_IMDB.size,
        keep_as=_IMDB.name,
        also_published=(
            Checksum("md5", "7c2ac02c03563afcf9b574c7e56c153a", "torchtext datasets/imdb.py"),
            Checksum("sha1", "01ada507287d82875905620988597833ad4e0903", "d2l DATA_HUB['aclImdb']"),
        ),
    ),),
    aliases=("aclimdb", "imdb-reviews", "large-movie-review"),
    mirrored=False,
    scales=("full",),
    needed_by="chapter 11, ULMFiT",
    notes="Not in the offline mirror (84 MB). The archive is kept as downloaded (its sha256 and size are Hugging "
    "Face's); the reader reads the reviews straight out of it.",
)


# ---------------------------------------------------------------------------------------------------- readers
def sst2(split: str = "train", root: Root = None) -> tuple[list[str], list[int]]:
    """SST-2 as packaged by GLUE (Socher et al. 2013; Wang et al. 2019): sentences and labels (0 negative, 1 positive).

    ``train`` holds 67,349 phrases, ``dev`` 872 sentences (files ``train.tsv`` / ``dev.tsv``, header
    ``sentence<TAB>label``; the sentences are lower-cased and tokenised, the trailing space is dropped).
    """
    if split not in _SST2_FILES:
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    lines = local_file(SST2_GLUE, _SST2_FILES[split], root).read_text(encoding="utf-8").split("\n")
    if lines[0].split("\t") != ["sentence", "label"]:
        raise ValueError(f"sst2-glue {split}.tsv: unexpected header {lines[0]!r}")
    sentences, labels = [], []
    for line in lines[1:]:
        if not line:
            continue
        sentence, label = line.rsplit("\t", 1)
        sentences.append(sentence.strip())
        labels.append(int(label))
    return sentences, labels


_TREE_TOKEN = re.compile(r"[()]|[^\s()]+")
_PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")"}  # and a backslash before "/" or "*" is dropped
_BACKSLASH = re.compile(r"\\([/*])")


def _tree(line: str) -> tuple[list[str], int]:
    """The leaves and the root label of one PTB-format tree, e.g. ``(3 (2 It) (4 (2 's) ...))``."""
    tokens = _TREE_TOKEN.findall(line)
    if len(tokens) < 4 or tokens[0] != "(" or not tokens[1].isdigit():
        raise ValueError(f"sst-trees: not a labelled tree: {line[:60]!r}")
    leaves = [_BACKSLASH.sub(r"\1", _PTB_ESCAPES.get(t, t))
              for before, t in zip(tokens, tokens[1:]) if before != "(" and t not in "()"]
    return leaves, int(tokens[1])


def sst_trees(split: str = "train", root: Root = None, binary: bool = False) -> tuple[list[str], list[int]]:
    """The Stanford Sentiment Treebank (Socher et al. 2013) as whole sentences and their root labels.

    Labels run 0-4 (very negative, negative, neutral, positive, very positive): 8,544 / 1,101 / 2,210 sentences
    for ``train`` / ``dev`` / ``test`` (SST-5). A sentence is its tree's leaves joined by single spaces, with the
    treebank's escapes undone (``-LRB-`` -> ``(``, ``-RRB-`` -> ``)``, ``\\/`` -> ``/``, ``\\*`` -> ``*``) and
    the case kept. ``binary=True`` gives the sentence-level binary task (SST-2): neutral sentences dropped,
    0-1 -> 0 and 3-4 -> 1 (6,920 / 872 / 1,821 sentences; lower-cased, the 872 dev sentences are GLUE's SST-2 dev
    set). The labels of inner phrases are not returned.
    """
    if split not in _SST_TREE_FILES:
        raise ValueError(f"split must be one of {sorted(_SST_TREE_FILES)}, got {split!r}")
    text = local_file(SST_TREES, _SST_TREE_FILES[split], root).read_text(encoding="utf-8")
    sentences, labels = [], []
    for line in text.split("\n"):
        if not line.strip():
            continue
        leaves, label = _tree(line)
        if binary and label == 2:
            continue
        sentences.append(" ".join(leaves))
        labels.append(int(label > 2) if binary else label)
    return sentences, labels


_REVIEW = re.compile(r"^aclImdb/(train|test)/(neg|pos|unsup)/(\d+)_(\d+)\.txt$")


def imdb(split: str = "train", root: Root = None) -> tuple[list[str], list[int]]:
    """IMDb movie reviews (Maas et al. 2011): texts and labels (0 negative, 1 positive).

    ``train`` and ``test`` hold 25,000 reviews each (12,500 per label: all negative ones first, each group in
    order of the review's number); ``unsup`` the 50,000 unlabelled training reviews (label ``-1``), which ULMFiT
    fine-tunes its language model on. Reviews are read straight from the kept archive
    (``aclImdb/<split>/{neg,pos}/<n>_<stars>.txt``; nothing is extracted) and keep their text as written,
    HTML line breaks ``<br />`` included. Reading takes a few seconds.
    """
    if split not in IMDB_SPLITS:
        raise ValueError(f"split must be one of {IMDB_SPLITS}, got {split!r}")
    folder = "train" if split == "unsup" else split
    reviews = []
    with tarfile.open(local_file(IMDB, _IMDB, root), "r:gz") as archive:
        for info in archive:
            found = _REVIEW.match(info.name)
            if found is None or not info.isfile() or found[1] != folder or (found[2] == "unsup") != (split == "unsup"):
                continue
            label = {"neg": 0, "pos": 1, "unsup": -1}[found[2]]
            handle = archive.extractfile(info)
            if handle is not None:
                reviews.append((label, int(found[3]), handle.read().decode("utf-8")))
    reviews.sort(key=lambda review: review[:2])
    return [text for _, _, text in reviews], [label for label, _, _ in reviews]
