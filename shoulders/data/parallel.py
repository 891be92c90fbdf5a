"""The book's translation corpora -- sentence-aligned pairs, registry entries and readers side by side.

* Multi30k, Task 1 (Elliott et al. 2016): German-English image descriptions, the Transformer chapter's data --
  :func:`multi30k` (one language side of a split; line ``i`` of both sides translate each other);
* Tatoeba English-French (manythings.org's 2019 export, d2l's translation toy set) -- :func:`tatoeba_fra_eng`.

Readers take an optional ``root`` folder; without it the files come from :func:`shoulders.data.path`.
"""
from __future__ import annotations

import gzip

from .entry import Checksum, Citation, Dataset, Download, LocalFile, Member
from .provide import Root, local_file

__all__ = ["MULTI30K", "MULTI30K_SPLITS", "TATOEBA_FRA_ENG", "multi30k", "tatoeba_fra_eng"]

_RAW = "https://raw.githubusercontent.com"

# -------------------------------------------------------------------------------------------------- Multi30k
MULTI30K_SPLITS = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
_M30K_FACTS = {  # (split, language): (bytes, sha256) of the authors' gzipped file <stem>.<language>.gz
    ("train", "en"): (568_929, "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f"),
    ("train", "de"): (637_044, "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6"),
    ("valid", "en"): (21_650, "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28"),
    ("valid", "de"): (24_681, "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a"),
    ("test", "en"): (21_077, "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9"),
    ("test", "de"): (22_890, "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8"),
}
_M30K_FILES = {key: LocalFile(f"{MULTI30K_SPLITS[key[0]]}.{key[1]}.gz", size, sha256)
               for key, (size, sha256) in _M30K_FACTS.items()}
_WMT16 = (  # torchtext's archives (name, bytes, sha256 as torchtext publishes it), kept unextracted
    ("training.tar.gz", 1_207_136, "20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e"),
    ("validation.tar.gz", 46_329, "a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c"),
    ("mmt16_task1_test.tar.gz", 67_079, "6d1ca1dba99e2c5dd54cae1226ff11c2551e6ce63527ebb072a1f70f72a5cd36"),
)
_WMT16_FILES = {name: LocalFile(f"torchtext-wmt16/{name}", size, sha256) for name, size, sha256 in _WMT16}

MULTI30K = Dataset(
    name="multi30k",
    title="Multi30k, Task 1 (English-German)",
    description="Image descriptions from Flickr30k with German translations: 29,000 / 1,014 / 1,000 sentence "
    "pairs, one sentence per line; both the authors' current files (*.gz) and the WMT16 archives torchtext "
    "uses (torchtext-wmt16/, whose German validation set predates 61 corrections).",
    homepage="https://github.com/multi30k/dataset",
    licence="None stated; non-commercial research and educational use only (authors' README, Flickr30k terms)",
    citations=(Citation(
        authors="Desmond Elliott, Stella Frank, Khalil Sima'an, Lucia Specia",
        year=2016,
        title="Multi30K: Multilingual English-German Image Descriptions",
        venue="Proceedings of the 5th Workshop on Vision and Language, pp. 70-74",
    ),),
    files=tuple(_M30K_FILES.values()) + tuple(_WMT16_FILES.values()),
    downloads=tuple(
        Download(
            urls=(f"{_RAW}/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/{f.name}",),
            filename=f.name,
            format="file",
            size=f.size,
            keep_as=f.name,
        )
        for f in _M30K_FILES.values()
    ) + tuple(
        Download(
            urls=(
                f"{_RAW}/neychev/small_DL_repo/master/datasets/Multi30k/{name}",
                f"{_RAW}/neychev/small_DL_repo/1cc0d4bf4c97119c73ae93411d361c040ce1394c/datasets/Multi30k/{name}",
            ),
            filename=name,
            format="file",
            checksum=Checksum("sha256", sha256, "torchtext datasets/multi30k.py (hash_type sha256)"),
            size=size,
            keep_as=_WMT16_FILES[name].name,
        )
        for name, size, sha256 in _WMT16
    ),
    aliases=("multi30k-en-de", "multi30k-de-en", "m30k"),
    notes="The torchtext archives were first published at http://www.quest.dcs.shef.ac.uk/wmt16_files_mmt/; "
    "they are kept unextracted, as in the mirror.",
)

# -------------------------------------------------------------------------------------------- Tatoeba fra-eng
_FRA = LocalFile("fra.txt", 11_669_748, "0bb85dbaa1c896844649094d7eaf2e34bee34e84fe362b26ce7e8f2e12aae104")
_ABOUT = LocalFile("_about.txt", 1_441, "79f39a53dbddaf7ab43c801f231089174a611f23987244056f9e3cb5aa79358b")

TATOEBA_FRA_ENG = Dataset(
    name="tatoeba-fra-eng",
    title="Tatoeba English-French sentence pairs (manythings.org fra-eng, 2019)",
    description="167,130 short English<TAB>French sentence pairs (2019-04-07 export), the d2l translation toy set.",
    homepage="http://www.manythings.org/anki/",
    licence="CC BY 2.0 (attribution: www.manythings.org/anki and tatoeba.org)",
    citations=(Citation(
        authors="Tatoeba Project contributors; prepared by manythings.org",
        year=2019,
        title="Tatoeba English-French sentence pairs (fra-eng)",
        venue="https://tatoeba.org and http://www.manythings.org/anki/",
    ),),
    files=(_FRA, _ABOUT),
    downloads=(Download(
        urls=("http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip",),
        filename="fra-eng.zip",
        format="zip",
        checksum=Checksum("sha1", "94646ad1522d915e7b0f9296181140edcf86a4f5", "d2l DATA_HUB['fra-eng']"),
        members=tuple(Member(f"fra-eng/{f.name}", f.name, check="archive") for f in (_FRA, _ABOUT)),
    ),),
    aliases=("tatoeba", "fra-eng", "eng-fra", "anki-fra-eng"),
    notes="The mirror's files came from a re-packed zip with d2l's layout; byte equality with d2l's zip is not "
    "verified, so a download is vouched for by d2l's SHA-1 of the zip, not by the mirror's sha256.",
)


# ---------------------------------------------------------------------------------------------------- readers
def multi30k(split: str = "train", lang: str = "en", root: Root = None) -> list[str]:
    """Multi30k Task 1 (Elliott et al. 2016): the ``lang`` ("en" or "de") side of ``split`` as raw sentences.

    ``train`` / ``valid`` / ``test`` are the 29,000 / 1,014 / 1,000 image descriptions of the authors' current
    files (``test`` is the 2016 Flickr test set); line ``i`` of the English and the German file translate each
    other. Sentences keep their case and punctuation; tokenise them yourself (e.g.
    :func:`shoulders.text.simple_words`).
    """
    if split not in MULTI30K_SPLITS:
        raise ValueError(f"split must be one of {sorted(MULTI30K_SPLITS)}, got {split!r}")
    if lang not in ("en", "de"):
        raise ValueError(f"lang must be 'en' or 'de', got {lang!r}")
    with gzip.open(local_file(MULTI30K, _M30K_FILES[split, lang], root), "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.strip() for line in lines]


def tatoeba_fra_eng(root: Root = None) -> list[tuple[str, str]]:
    """Tatoeba English-French (manythings.org, 2019 export): 167,130 ``(english, french)`` sentence pairs.

    The text is as in ``fra.txt`` -- short sentences, shortest first, with their case, punctuation and the
    French typography's narrow no-break spaces (U+202F) before ``!``, ``?`` and ``:``.
    """
    pairs = []
    for line in local_file(TATOEBA_FRA_ENG, _FRA, root).read_text(encoding="utf-8").split("\n"):
        if line:
            english, french = line.split("\t")[:2]
            pairs.append((english, french))
    return pairs
