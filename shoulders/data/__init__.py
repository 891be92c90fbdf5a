"""The book's datasets: a registry of facts, a verified local folder for each, and a reader beside each entry.

>>> import shoulders.data as data
>>> data.names()[:2]
('wikitext-2', 'tiny-shakespeare')

* :func:`path` -- a verified local folder: cache, else the read-only mirror ``SHOULDERS_DATA_MIRROR``, else a
  download; :func:`info`, :func:`names`, :func:`credits`, :func:`cache_root`, :func:`mirror_root`;
* readers, each beside its registry entry: :func:`wikitext2`, :func:`wikitext103`, :func:`wikitext_documents`,
  :func:`tiny_shakespeare`, :func:`text8` (:mod:`~shoulders.data.corpora`); :func:`multi30k`,
  :func:`tatoeba_fra_eng` (:mod:`~shoulders.data.parallel`); :func:`sst2`, :func:`sst_trees`, :func:`imdb`
  (:mod:`~shoulders.data.sentiment`); :func:`snli`, :func:`wnut17`, :func:`squad`, :func:`copa`
  (:mod:`~shoulders.data.tasks`); the analogy and word-similarity sets that ship inside gensim
  (:mod:`~shoulders.data.word_tests`).

One job per module: :mod:`~shoulders.data.entry` (the shape of an entry), :mod:`~shoulders.data.errors` (what
goes wrong, and what to do), :mod:`~shoulders.data.local` (cache root, stamps, checking a file),
:mod:`~shoulders.data.remote` (download, safe extraction), :mod:`~shoulders.data.mirror` (the read-only
mirror), :mod:`~shoulders.data.provide` (cache, else mirror, else download), :mod:`~shoulders.data.registry`
(the entries by name). Every failure is a :class:`DatasetError` whose message says what to do. To use a dataset
the registry does not know, build a :class:`Dataset` and pass it to :func:`path`.

Settings (environment variables; an empty value counts as unset, a bad one is an error naming the variable):
``SHOULDERS_DATA`` -- the cache folder (created if missing); ``SHOULDERS_DATA_MIRROR`` -- a read-only offline copy
laid out like the book's ``shared/data`` (it may not overlap the cache); ``SHOULDERS_DOWNLOAD_TIMEOUT`` -- seconds
to wait for a server that does not answer (default 60, per address).
"""
from __future__ import annotations

from .corpora import (
    EOS, WIKITEXT2_SPLITS, text8, tiny_shakespeare, wikitext2, wikitext103, wikitext_detokenize, wikitext_documents,
)
from .entry import Checksum, Citation, Dataset, Download, LocalFile, Member
from .errors import (
    ArchiveError,
    CacheError,
    ChecksumError,
    DatasetError,
    DownloadError,
    MirrorChecksumError,
    MirrorError,
    UnknownDatasetError,
)
from .local import cache_root
from .mirror import mirror_folder, mirror_root
from .parallel import MULTI30K_SPLITS, multi30k, tatoeba_fra_eng
from .registry import REGISTRY, credits, info, names, path
from .sentiment import IMDB_SPLITS, SST2_LABELS, imdb, sst2, sst_trees
from .tasks import SNLI_LABELS, SQUAD_SPLITS, WNUT17_SPLITS, WNUT17_TAGS, copa, copa_split, snli, squad, wnut17

__all__ = [
    "EOS", "IMDB_SPLITS", "MULTI30K_SPLITS", "REGISTRY", "SNLI_LABELS", "SQUAD_SPLITS", "SST2_LABELS",
    "WIKITEXT2_SPLITS", "WNUT17_SPLITS", "WNUT17_TAGS",
    "ArchiveError", "CacheError", "Checksum", "ChecksumError", "Citation", "Dataset", "DatasetError", "Download",
    "DownloadError", "LocalFile", "Member", "MirrorChecksumError", "MirrorError", "UnknownDatasetError",
    "cache_root", "copa", "copa_split", "credits", "imdb", "info", "mirror_folder", "mirror_root", "multi30k", "names",
    "path",
    "snli", "squad", "sst2", "sst_trees", "tatoeba_fra_eng", "text8", "tiny_shakespeare", "wikitext103",
    "wikitext2", "wikitext_detokenize", "wikitext_documents", "wnut17",
]
