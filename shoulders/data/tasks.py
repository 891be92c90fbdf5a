"""BERT's fine-tuning data (Devlin et al. 2019, §4; chapter 14) -- registry entries and readers side by side.

* SNLI 1.0 (Bowman et al. 2015): sentence-pair classification -- :func:`snli` (dev and test mirrored; the
  550,152 training pairs are the ``full``-scale entry ``snli-train``);
* WNUT-17 emerging entities (Derczynski et al. 2017): token tagging -- :func:`wnut17`;
* SQuAD v1.1 (Rajpurkar et al. 2016): span extraction -- :func:`squad` (dev mirrored; the training set is the
  ``full``-scale entry ``squad-v1.1-train``);
* Balanced COPA (Roemmele et al. 2011; Kavumba et al. 2019): multiple choice, standing in for SWAG -- :func:`copa`.

SST-2, the single-sentence task, is in :mod:`shoulders.data.sentiment`. Readers return plain Python data and
take an optional ``root`` folder; without it the files come from :func:`shoulders.data.path`. BERT's features
for each task are built by :mod:`shoulders.text.task_features`.
"""
from __future__ import annotations

import gzip
import json
import random
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .entry import Checksum, Citation, Dataset, Download, LocalFile, Member
from .provide import Root, folder, local_file

__all__ = [
    "COPA_BALANCED", "SNLI", "SNLI_LABELS", "SNLI_TRAIN", "SQUAD_SPLITS", "SQUAD_V11", "SQUAD_V11_TRAIN", "WNUT17",
    "WNUT17_SPLITS", "WNUT17_TAGS", "copa", "copa_split", "snli", "squad", "wnut17",
]

SNLI_LABELS = ("entailment", "neutral", "contradiction")
# WNUT-17's tags in the order of the Hugging Face ``wnut_17`` loader
WNUT17_TAGS = ("O", "B-corporation", "I-corporation", "B-creative-work", "I-creative-work", "B-group", "I-group",
               "B-location", "I-location", "B-person", "I-person", "B-product", "I-product")
_RAW = "https://raw.githubusercontent.com"

# ------------------------------------------------------------------------------------------------------- SNLI
_BOWMAN_2015 = Citation(
    authors="Samuel R. Bowman, Gabor Angeli, Christopher Potts, Christopher D. Manning",
    year=2015,
    title="A large annotated corpus for learning natural language inference",
    venue="EMNLP",
)
_SNLI_ZIP = dict(  # the one official zip (train, dev and test), as its publishers describe it
    urls=("https://nlp.stanford.edu/projects/snli/snli_1.0.zip",),
    filename="snli_1.0.zip",
    format="zip",
    checksum=Checksum("sha1", "9fcde07509c7e87ec61c640c1b2753d9041758e4", "d2l DATA_HUB['SNLI']"),
    size=94_550_081,
    also_published=(
        Checksum("md5", "981c3df556bbaea3f17f752456d0088c", "torchtext former datasets/snli.py"),
        Checksum("sha256", "afb3d70a5af5d8de0d9d81e2637e0fb8c22d1235c2749d83125ca43dab0dbd3e",
                 "Hugging Face datasets/snli/dataset_infos.json"),
    ),
)
_SNLI_FILES = {
    "dev": LocalFile("snli_1.0_dev.jsonl.gz", 1_004_730,
                     "e5cfcc71b4846c40e06bae364a13312adeb434884e9a7cedf67037bdd212e39d",
                     content_sha256="9c03faff70182ef086ebfeed2cffbabb5fcc6a84a8b3314decbbb5b01f07f4bf"),
    "test": LocalFile("snli_1.0_test.jsonl.gz", 1_005_357,
                      "ef5f0721f18e6aafd80f0d67aa2ef9784277aa08ba6a582c03fc381367282ac5",
                      content_sha256="1147550151ca8b16ddb31d8dc0e739a670a65f7c3e64aac5951eaeff103fb220"),
    "train": LocalFile("snli_1.0_train.jsonl", None, None),  # vouched for by the zip's published checksums
}

SNLI = Dataset(
    name="snli",
    title="SNLI 1.0 (dev and test)",
    description="Stanford Natural Language Inference: premise/hypothesis pairs labelled entailment, neutral or "
    "contradiction; dev and test, 10,000 pairs each, as gzipped JSON lines.",
    homepage="https://nlp.stanford.edu/projects/snli/",
    licence="CC BY-SA 4.0",
    citations=(_BOWMAN_2015,),
    files=(_SNLI_FILES["dev"], _SNLI_FILES["test"]),
    downloads=(Download(
        **_SNLI_ZIP,
        members=tuple(Member(f"snli_1.0/{f.name.removesuffix('.gz')}", f.name, gzip=True, check="content")
                      for f in (_SNLI_FILES["dev"], _SNLI_FILES["test"])),
    ),),
    aliases=("snli-1.0", "snli1.0", "snli_1.0"),
    notes="The official zip holds plain .jsonl files; a download gzips the dev/test members, so the .gz bytes "
    "differ from the mirror's while the decompressed text is checked against the mirror's (sha256 of the "
    "uncompressed file). The training split is the entry 'snli-train'.",
)

SNLI_TRAIN = Dataset(
    name="snli-train",
    title="SNLI 1.0 (training set)",
    description="The 550,152 training pairs of SNLI 1.0 (snli_1.0_train.jsonl, JSON lines, about 470 MB).",
    homepage=SNLI.homepage,
    licence=SNLI.licence,
    citations=(_BOWMAN_2015,),
    files=(_SNLI_FILES["train"],),
    downloads=(Download(
        **_SNLI_ZIP,
        members=(Member(f"snli_1.0/{_SNLI_FILES['train'].name}", _SNLI_FILES["train"].name, check="archive"),),
    ),),
    aliases=("snli-1.0-train", "snli-full"),
    mirrored=False,
    scales=("full",),
    needed_by="chapter 8, InferSent, and chapter 14, BERT on SNLI",
    notes="Not in the offline mirror. The member's size and hash are not published: the zip's published "
    "checksums (d2l's sha1, checked; torchtext's md5 and Hugging Face's sha256, recorded) vouch for it.",
)

# ---------------------------------------------------------------------------------------------------- WNUT-17
_WNUT_FILES = {
    "train": LocalFile("wnut17train.conll", 493_781,
                       "731820e13f71af324c6b55a1575ec2ce59fbaa2a0806f8f0400b98d56cd6a7a5"),
    "dev": LocalFile("emerging.dev.conll", 114_749, "e053b752b8155113ca66e7db08af5f2f5f43ab993694e4774f1ec5bad42312d8"),
    "test": LocalFile("emerging.test.annotated", 192_425,
                      "2aa79b764e56ec9264a1b30fdd9b70195bd00ff400b62edd8f399d5f13c178f0"),
}
WNUT17_SPLITS = {split: f.name for split, f in _WNUT_FILES.items()}

WNUT17 = Dataset(
    name="wnut17",
    title="WNUT-17 Emerging and Rare Entities",
    description="Named-entity recognition on noisy user-generated text (tweets, Reddit, YouTube, StackExchange): "
    "token<TAB>BIO-tag, six entity types; 3,394 / 1,009 / 1,287 sentences.",
    homepage="https://github.com/leondz/emerging_entities_17",
    licence="CC BY 4.0",
    citations=(Citation(
        authors="Leon Derczynski, Eric Nichols, Marieke van Erp, Nut Limsopatham",
        year=2017,
        title="Results of the WNUT2017 Shared Task on Novel and Emerging Entity Recognition",
        venue="Proceedings of the 3rd Workshop on Noisy User-generated Text (W-NUT), EMNLP",
    ),),
    files=tuple(_WNUT_FILES.values()),
    downloads=tuple(
        Download(
            urls=(
                f"{_RAW}/leondz/emerging_entities_17/master/{f.name}",
                f"{_RAW}/leondz/emerging_entities_17/e52a2d2a71ac1a051ca2d532eef28653c5c02603/{f.name}",
            ),
            filename=f.name,
            format="file",
            size=f.size,
            keep_as=f.name,
        )
        for f in _WNUT_FILES.values()
    ),
    aliases=("wnut-17", "wnut_17", "wnut"),
)

# --------------------------------------------------------------------------------------------------- SQuAD v1.1
_RAJPURKAR_2016 = Citation(
    authors="Pranav Rajpurkar, Jian Zhang, Konstantin Lopyrev, Percy Liang",
    year=2016,
    title="SQuAD: 100,000+ Questions for Machine Comprehension of Text",
    venue="EMNLP",
)
_SQUAD_URL = "https://rajpurkar.github.io/SQuAD-explorer/dataset"
_SQUAD_FACTS = {  # split: file, bytes and sha256 (Hugging Face; the mirror's dev file has them), md5 (torchtext)
    "dev": ("dev-v1.1.json", 4_854_279, "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9",
            "3e85deb501d4e538b6bc56f786231552"),
    "train": ("train-v1.1.json", 30_288_272, "3527663986b8295af4f7fcdff1ba1ff3f72d07d61a20f487cb238a6ef92fd955",
              "981b29407e0affa3b1b156f72073b945"),
}
_SQUAD_FILES = {split: LocalFile(name, size, sha256) for split, (name, size, sha256, _) in _SQUAD_FACTS.items()}
SQUAD_SPLITS = {split: f.name for split, f in _SQUAD_FILES.items()}


def _squad_download(split: str) -> Download:
    name, size, sha256, md5 = _SQUAD_FACTS[split]
    return Download(urls=(f"{_SQUAD_URL}/{name}",), filename=name, format="file", size=size, keep_as=name,
                    checksum=Checksum("md5", md5, "torchtext datasets/squad1.py"),
                    also_published=(Checksum("sha256", sha256, "Hugging Face datasets/squad/dataset_infos.json"),))


SQUAD_V11 = Dataset(
    name="squad-v1.1",
    title="SQuAD v1.1 (dev set)",
    description="Extractive question answering over Wikipedia paragraphs; the dev set only: 48 articles, "
    "2,067 paragraphs, 10,570 questions with up to several reference answers each.",
    homepage="https://rajpurkar.github.io/SQuAD-explorer/",
    licence="CC BY-SA 4.0",
    citations=(_RAJPURKAR_2016,),
    files=(_SQUAD_FILES["dev"],),
    downloads=(_squad_download("dev"),),
    aliases=("squad", "squad1", "squad-v1", "squad1.1", "squad-1.1"),
    notes="The training set is the entry 'squad-v1.1-train'.",
)

SQUAD_V11_TRAIN = Dataset(
    name="squad-v1.1-train",
    title="SQuAD v1.1 (training set)",
    description="The SQuAD v1.1 training set: 87,599 questions on 442 Wikipedia articles.",
    homepage=SQUAD_V11.homepage,
    licence=SQUAD_V11.licence,
    citations=(_RAJPURKAR_2016,),
    files=(_SQUAD_FILES["train"],),
    downloads=(_squad_download("train"),),
    aliases=("squad-train", "squad1.1-train", "squad-v1-train"),
    mirrored=False,
    scales=("full",),
    needed_by="chapter 14, BERT on SQuAD",
    notes="Not in the offline mirror (30 MB). The file is kept as downloaded; its sha256 and size are Hugging "
    "Face's, its md5 torchtext's.",
)

# ----------------------------------------------------------------------------------------------- Balanced COPA
_COPA = LocalFile("balanced-copa-dev-all.xml", 208_323,
                  "2091dce8a2923b8530804644780ebe01fd1ae30342eb2562a3821786274b5b25")

COPA_BALANCED = Dataset(
    name="copa-balanced",
    title="Balanced COPA (dev set)",
    description="1,000 two-choice commonsense causal-reasoning items: the 500 original COPA dev items plus 500 "
    "'mirrored' ones that remove surface cues (XML: premise, two alternatives, cause/effect, answer).",
    homepage="https://balanced-copa.github.io",
    licence="Not stated in the repository (Hugging Face card pkavumba/balanced-copa: CC BY 4.0)",
    citations=(
        Citation(
            authors="Melissa Roemmele, Cosmin Adrian Bejan, Andrew S. Gordon",
            year=2011,
            title="Choice of Plausible Alternatives: An Evaluation of Commonsense Causal Reasoning",
            venue="AAAI Spring Symposium on Logical Formalizations of Commonsense Reasoning",
        ),
        Citation(
            authors="Pride Kavumba, Naoya Inoue, Benjamin Heinzerling, Keshav Singh, Paul Reisert, Kentaro Inui",
            year=2019,
            title="When Choosing Plausible Alternatives, Clever Hans can be Clever",
            venue="Proceedings of the First Workshop on Commonsense Inference in NLP (COIN), EMNLP",
        ),
    ),
    files=(_COPA,),
    downloads=(Download(
        urls=(f"{_RAW}/Balanced-COPA/Balanced-COPA/92c2ec6d792b3e43a741d4e94ceb731b25f9a719/{_COPA.name}",),
        filename=_COPA.name,
        format="file",
        size=_COPA.size,
        keep_as=_COPA.name,
    ),),
    aliases=("copa", "b-copa", "balanced-copa", "bcopa"),
)


# ---------------------------------------------------------------------------------------------------- readers
def _snli_file(place: Path, name: str) -> Path | None:
    """``name`` in ``place``, or its gzipped / plain twin (``x.jsonl`` <-> ``x.jsonl.gz``), or ``None``."""
    twin = name.removesuffix(".gz") if name.endswith(".gz") else name + ".gz"
    return next((place / n for n in (name, twin) if (place / n).is_file()), None)


def snli(split: str = "dev", root: Root = None) -> tuple[list[str], list[str], list[int]]:
    """SNLI 1.0 (Bowman et al. 2015): premises, hypotheses and labels (indices into :data:`SNLI_LABELS`).

    Pairs whose ``gold_label`` is ``"-"`` (no majority among the five annotators) are dropped, as usual: ``dev``
    keeps 9,842 of 10,000 pairs, ``test`` 9,824. ``train`` (550,152 pairs before the drop) comes from the entry
    ``snli-train``, which only ``SHOULDERS_SCALE=full`` needs and the offline mirror does not hold; with ``root``,
    a ``snli_1.0_<split>.jsonl`` file or its ``.gz`` in that folder is read.
    """
    if split not in _SNLI_FILES:
        raise ValueError(f"split must be 'train', 'dev' or 'test', got {split!r}")
    entry = SNLI_TRAIN if split == "train" else SNLI
    place = folder(entry, root)
    file = _snli_file(place, _SNLI_FILES[split].name)
    if file is None and split == "train":
        raise FileNotFoundError(
            f"snli: no training split in {place}. The registry entry 'snli' (and its mirror) keeps only dev and "
            "test; the 550,152 training pairs are the entry 'snli-train' (SHOULDERS_SCALE=full), the member "
            f"snli_1.0/{_SNLI_FILES['train'].name} of {SNLI_TRAIN.downloads[0].url} -- call snli('train') without "
            "root to fetch it, or put that file (or its .gz) in a folder and pass root=that folder.")
    if file is None:
        raise FileNotFoundError(f"snli: {place / _SNLI_FILES[split].name} is missing")
    opener = gzip.open if file.suffix == ".gz" else open
    premises, hypotheses, labels = [], [], []
    with opener(file, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if row["gold_label"] == "-":
                continue
            premises.append(row["sentence1"])
            hypotheses.append(row["sentence2"])
            labels.append(SNLI_LABELS.index(row["gold_label"]))
    return premises, hypotheses, labels


def wnut17(split: str = "train", root: Root = None) -> list[tuple[list[str], list[str]]]:
    """WNUT-17 emerging and rare entities (Derczynski et al. 2017) as ``(words, BIO tags)`` sentences.

    CoNLL format, ``word<TAB>tag`` per line, sentences separated by a blank line (in the training file sometimes a
    lone tab). ``train`` / ``dev`` / ``test`` hold 3,394 / 1,009 / 1,287 sentences (62,730 / 15,733 / 23,394
    words); the tags are those of :data:`WNUT17_TAGS` (six entity types).
    """
    if split not in _WNUT_FILES:
        raise ValueError(f"split must be one of {sorted(_WNUT_FILES)}, got {split!r}")
    text = local_file(WNUT17, _WNUT_FILES[split], root).read_text(encoding="utf-8")
    sentences: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            if words:
                sentences.append((words, tags))
                words, tags = [], []
            continue
        word, tag = line.split("\t")
        if tag not in WNUT17_TAGS:
            raise ValueError(f"wnut17 {split}: unknown tag {tag!r} in line {line!r}")
        words.append(word)
        tags.append(tag)
    if words:
        sentences.append((words, tags))
    return sentences


def squad(split: str = "dev", root: Root = None) -> list[dict[str, Any]]:
    """SQuAD v1.1 (Rajpurkar et al. 2016) as articles: ``{"title", "paragraphs": [{"context", "qas": [...]}]}``.

    Each question is ``{"id", "question", "answers": [texts], "answer_starts": [character offsets]}`` (the dev
    set gives up to several reference answers per question). ``dev`` (entry ``squad-v1.1``, mirrored): 48
    articles, 2,067 paragraphs, 10,570 questions -- the smaller scales train on part of its articles
    (:func:`shoulders.text.task_features.split_articles`). ``train`` (entry ``squad-v1.1-train``, ``full``
    scale only): 442 articles, 87,599 questions with one answer each.
    """
    if split not in _SQUAD_FILES:
        raise ValueError(f"split must be one of {sorted(_SQUAD_FILES)}, got {split!r}")
    entry = SQUAD_V11_TRAIN if split == "train" else SQUAD_V11
    data = json.loads(local_file(entry, _SQUAD_FILES[split], root).read_text(encoding="utf-8"))
    return [{"title": article["title"],
             "paragraphs": [{"context": p["context"],
                             "qas": [{"id": qa["id"], "question": qa["question"],
                                      "answers": [a["text"] for a in qa["answers"]],
                                      "answer_starts": [a["answer_start"] for a in qa["answers"]]}
                                     for qa in p["qas"]]}
                            for p in article["paragraphs"]]}
            for article in data["data"]]


def copa(root: Root = None) -> list[dict[str, Any]]:
    """Balanced COPA (Kavumba et al. 2019) over the COPA dev set (Roemmele et al. 2011): 1,000 two-choice items.

    Each item: ``{"id", "premise", "choice1", "choice2", "question" ("cause"/"effect"), "label" (0 or 1),
    "mirrored", "pair"}``. The XML has no mirrored attribute: ids 1-500 are the original COPA dev items and ids
    1001-1500 their B-COPA mirrors (same alternatives, a new premise for which the other alternative is right), so
    ``mirrored`` is ``id > 1000`` and ``pair`` (the original's id) is ``id % 1000``. Split them with
    :func:`copa_split`, which keeps the two items of a pair on the same side.
    """
    tree = ET.parse(local_file(COPA_BALANCED, _COPA, root))
    items = []
    for item in tree.getroot().iter("item"):
        i = int(item.get("id"))
        question = item.get("asks-for")
        if question not in ("cause", "effect"):
            raise ValueError(f"copa item {i}: asks-for={question!r}")
        items.append({"id": i, "premise": item.findtext("p").strip(), "choice1": item.findtext("a1").strip(),
                      "choice2": item.findtext("a2").strip(), "question": question,
                      "label": int(item.get("most-plausible-alternative")) - 1, "mirrored": i > 1000,
                      "pair": i % 1000})
    return items


def copa_split(items: Sequence[Mapping[str, Any]], n_train: int, seed: int = 0
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Balanced COPA items cut into (train, held out) by **pair**: an original item and its mirror always land on
    the same side, the pairs in a random order drawn from ``seed``, ``n_train`` items (rounded down to whole
    pairs) for training.

    Why by pair: the two items of a pair share their alternatives with opposite answers (Kavumba et al. 2019,
    §3). Split at random, a model that learns "this alternative is the right one" from a training item gets its
    mirror in the held-out set wrong, and scores *below* chance for a reason that has nothing to do with causal
    reasoning.
    """
    pairs: dict[int, list[dict[str, Any]]] = {}
    for item in items:
        pairs.setdefault(int(item["pair"]), []).append(dict(item))
    if not 0 <= n_train <= len(items):
        raise ValueError(f"n_train must be between 0 and the {len(items)} items, got {n_train}")
    keys = sorted(pairs)
    order = [keys[i] for i in random.Random(seed).sample(range(len(keys)), len(keys))]
    train: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    for key in order:
        group = sorted(pairs[key], key=lambda it: it["id"])
        (train if len(train) + len(group) <= n_train and not held else held).extend(group)
    return train, held
