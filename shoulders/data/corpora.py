"""The book's plain-text corpora -- registry entries and readers side by side.

* WikiText-2 (Merity et al. 2016): word-level language modelling in chapters 1-3 and 14 -- :func:`wikitext2`,
  and as articles of sentences for BERT's pre-training, :func:`wikitext_documents`;
* WikiText-103 (same paper; ``full`` scale only): ULMFiT's and Transformer-XL's corpus -- :func:`wikitext103`;
* Tiny Shakespeare (Karpathy 2015): character-level language modelling -- :func:`tiny_shakespeare`;
* text8 (Mahoney 2006; ``full`` scale only): the word-vector chapters' corpus -- :func:`text8`.

Each reader takes an optional ``root`` folder holding the files; without it the folder comes from the cache, the
offline mirror or a download (:func:`shoulders.data.path`). File names are declared once, in the tables the
entries' ``files`` are built from.
"""
from __future__ import annotations

import re

from .entry import Checksum, Citation, Dataset, Download, LocalFile, Member
from .provide import Root, local_file

__all__ = [
    "EOS", "TEXT8", "TINY_SHAKESPEARE", "WIKITEXT2_SPLITS", "WIKITEXT_103", "WIKITEXT_2", "text8",
    "tiny_shakespeare", "wikitext103", "wikitext2", "wikitext_detokenize", "wikitext_documents",
]

EOS = "<eos>"
_RAW = "https://raw.githubusercontent.com"
_GLUON_WIKITEXT = "GluonNLP gluonnlp/data/corpora/wikitext.py"
_MERITY_2016 = Citation(
    authors="Stephen Merity, Caiming Xiong, James Bradbury, Richard Socher",
    year=2016,
    title="Pointer Sentinel Mixture Models",
    venue="arXiv:1609.07843",
    url="https://arxiv.org/abs/1609.07843",
)
_WIKITEXT_HOME = "https://blog.salesforceairesearch.com/the-wikitext-long-term-dependency-language-modeling-dataset/"

# ------------------------------------------------------------------------------------------------ WikiText-2
_WT2_FILES = {  # split -> the mirror's file (size, sha256) and the sha1 GluonNLP publishes for the same member
    "train": LocalFile("wiki.train.tokens", 10_797_148,
                       "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
                       published=Checksum("sha1", "863f29c46ef9d167fff4940ec821195882fe29d1", _GLUON_WIKITEXT)),
    "valid": LocalFile("wiki.valid.tokens", 1_121_681,
                       "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
                       published=Checksum("sha1", "0418625c8b4da6e4b5c7a0b9e78d4ae8f7ee5422", _GLUON_WIKITEXT)),
    "test": LocalFile("wiki.test.tokens", 1_256_449,
                      "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
                      published=Checksum("sha1", "c7b8ce0aa086fb34dab808c5c49224211eb2b172", _GLUON_WIKITEXT)),
}
WIKITEXT2_SPLITS = {split: file.name for split, file in _WT2_FILES.items()}

WIKITEXT_2 = Dataset(
    name="wikitext-2",
    title="WikiText-2 (v1, tokenised)",
    description="About 2M tokens of verified Good and Featured Wikipedia articles, tokenised, rare words as <unk>; "
    "the book's word-level language-modelling corpus (36,718 / 3,760 / 4,358 lines).",
    homepage=_WIKITEXT_HOME,
    licence="CC BY-SA 4.0",
    citations=(_MERITY_2016,),
    files=tuple(_WT2_FILES.values()),
    downloads=(Download(
        urls=("https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",),
        filename="wikitext-2-v1.zip",
        format="zip",
        checksum=Checksum("sha256", "92675f1d63015c1c8b51f1656a52d5bdbc33aafa60cc47a218a66e7ee817488c",
                          "Hugging Face datasets/wikitext/dataset_infos.json"),
        size=4_475_746,
        also_published=(
            Checksum("md5", "542ccefacc6c27f945fb54453812b3cd", "torchtext datasets/wikitext2.py"),
            Checksum("sha1", "3c914d17d80b1459be871a5039ac23e752a53cbe", "d2l DATA_HUB['wikitext-2']"),
        ),
        members=tuple(Member(f"wikitext-2/{f.name}", f.name) for f in _WT2_FILES.values()),
    ),),
    aliases=("wikitext2", "wikitext", "wt2", "wikitext-2-v1"),
    notes="The mirror's train file was rebuilt from token ids and matches pytorch/examples' git blob id; all three "
    "mirror files have the sha1 GluonNLP publishes for the zip's members. The zip itself could not be checked "
    "offline. Some users report the S3 address no longer answers.",
)

# ---------------------------------------------------------------------------------------------- WikiText-103
_WT103_FILES = {  # sizes are not published; GluonNLP publishes each member's sha1
    "train": LocalFile("wiki.train.tokens", None, None,
                       published=Checksum("sha1", "b7497e2dfe77e72cfef5e3dbc61b7b53712ac211", _GLUON_WIKITEXT)),
    "valid": LocalFile("wiki.valid.tokens", None, None,
                       published=Checksum("sha1", "c326ac59dc587676d58c422eb8a03e119582f92b", _GLUON_WIKITEXT)),
    "test": LocalFile("wiki.test.tokens", None, None,
                      published=Checksum("sha1", "8a5befc548865cec54ed4273cf87dbbad60d1e47", _GLUON_WIKITEXT)),
}

WIKITEXT_103 = Dataset(
    name="wikitext-103",
    title="WikiText-103 (v1, tokenised)",
    description="About 103M tokens of verified Good and Featured Wikipedia articles in WikiText-2's format "
    "(1,801,350 / 3,760 / 4,358 lines; validation and test are WikiText-2's articles); the general-domain "
    "corpus ULMFiT pre-trains on and Transformer-XL's benchmark.",
    homepage=_WIKITEXT_HOME,
    licence="CC BY-SA 4.0",
    citations=(_MERITY_2016,),
    files=tuple(_WT103_FILES.values()),
    downloads=(Download(
        urls=("https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip",),
        filename="wikitext-103-v1.zip",
        format="zip",
        checksum=Checksum("sha256", "242ba0f20b329cfdf1ccc61e9e9e5b59becf189db7f7a81cd2a0e2fc31539590",
                          "Hugging Face datasets/wikitext/dataset_infos.json"),
        size=190_229_076,
        also_published=(
            Checksum("md5", "9ddaacaf6af0710eda8c456decff7832", "torchtext datasets/wikitext103.py"),
            Checksum("sha1", "0aec09a7537b58d4bb65362fee27650eeaba625a", _GLUON_WIKITEXT),
        ),
        members=tuple(Member(f"wikitext-103/{f.name}", f.name) for f in _WT103_FILES.values()),
    ),),
    aliases=("wikitext103", "wt103", "wt-103", "wikitext-103-v1"),
    mirrored=False,
    scales=("full",),
    needed_by="chapter 11, ULMFiT's pre-training, and chapter 15, Transformer-XL",
    notes="Not in the offline mirror (the zip is 190 MB, its train file about 540 MB). The members' sizes are not "
    "published: each is checked against GluonNLP's sha1, the zip against Hugging Face's sha256 and size.",
)

# ------------------------------------------------------------------------------------------ Tiny Shakespeare
_SHAKESPEARE = LocalFile("input.txt", 1_115_394, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed")

TINY_SHAKESPEARE = Dataset(
    name="tiny-shakespeare",
    title="Tiny Shakespeare",
    description="About 1.1M characters (40,000 lines) of Shakespeare's plays, concatenated; the classic "
    "character-level language-modelling corpus of char-rnn.",
    homepage="https://github.com/karpathy/char-rnn",
    licence="Public domain text (works of Shakespeare); char-rnn repository: MIT",
    citations=(Citation(
        authors="Andrej Karpathy",
        year=2015,
        title="char-rnn: Multi-layer Recurrent Neural Networks for character-level language models",
        venue="GitHub repository",
        url="https://github.com/karpathy/char-rnn",
    ),),
    files=(_SHAKESPEARE,),
    downloads=(Download(
        urls=(
            f"{_RAW}/karpathy/char-rnn/master/data/tinyshakespeare/{_SHAKESPEARE.name}",
            f"{_RAW}/karpathy/char-rnn/6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e/data/tinyshakespeare/"
            f"{_SHAKESPEARE.name}",
        ),
        filename=_SHAKESPEARE.name,
        format="file",
        size=_SHAKESPEARE.size,
        keep_as=_SHAKESPEARE.name,
    ),),
    aliases=("tinyshakespeare", "shakespeare", "tiny_shakespeare"),
)

# ------------------------------------------------------------------------------------------------------ text8
_GLUON_TEXT8 = "GluonNLP gluonnlp/data/word_embedding_training.py (Text8, from http://mattmahoney.net/dc/)"
_TEXT8 = LocalFile("text8", 100_000_000, None,
                   published=Checksum("sha1", "0dc3edebc970dcc96137e7deda4d9995af9d93de", _GLUON_TEXT8))

TEXT8 = Dataset(
    name="text8",
    title="text8",
    description="The first 10^8 bytes of a cleaned English Wikipedia dump (lower-case letters and single spaces, "
    "about 17M words); the word-vector chapters' full-scale corpus.",
    homepage="http://mattmahoney.net/dc/textdata.html",
    licence="Not stated by the distributor; the text comes from English Wikipedia (2006 dump), whose terms apply",
    citations=(Citation(
        authors="Matt Mahoney",
        year=2006,
        title="About the Test Data (Large Text Compression Benchmark)",
        venue="http://mattmahoney.net/dc/textdata.html",
    ),),
    files=(_TEXT8,),
    downloads=(Download(
        urls=(
            "http://mattmahoney.net/dc/text8.zip",
            "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/dataset/"
            "large_text_compression_benchmark/text8-6c70299b.zip",
            "https://data.deepai.org/text8.zip",
        ),
        filename="text8.zip",
        format="zip",
        checksum=Checksum("sha1", "6c70299b93b7e1f927b42cd8f6ac1a31547c7a2e", _GLUON_TEXT8),
        size=31_344_016,
        members=(Member(_TEXT8.name, _TEXT8.name),),
    ),),
    aliases=("text-8",),
    mirrored=False,
    scales=("full",),
    needed_by="chapters 4-6, word2vec, GloVe and fastText",
    notes="Not in the offline mirror. The zip is 31,344,016 bytes (the size TensorFlow's word2vec tutorial checks) "
    "with the sha1 GluonNLP publishes for it (GluonNLP's re-hosted text8-6c70299b.zip has the same sha1); its "
    "member text8 is exactly 100,000,000 bytes with GluonNLP's published sha1. No sha256 is pinned yet.",
)


# ---------------------------------------------------------------------------------------------------- readers
def _lines(text: str) -> list[str]:
    """Lines split at ``\\n`` only (``str.splitlines`` would also split at ``\\x1c``, ``\\u2028``, ...); the newline
    that ends the last line does not start a new one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _wikitext(entry: Dataset, files: dict[str, LocalFile], split: str, root: Root, eos: str | None) -> list[list[str]]:
    if split not in files:
        raise ValueError(f"split must be one of {sorted(files)}, got {split!r}")
    text = local_file(entry, files[split], root).read_text(encoding="utf-8")
    tail = [] if eos is None else [eos]
    return [line.split() + tail for line in _lines(text)]


def wikitext2(split: str = "train", root: Root = None, eos: str | None = EOS) -> list[list[str]]:
    """WikiText-2 (Merity et al. 2016, tokenised v1) as lines of tokens: ``list`` of ``list[str]``.

    The LM convention of the paper and of pytorch/examples: every line of the file -- empty ones included --
    is split on whitespace and ends with ``eos``. That gives exactly 2,088,628 / 217,646 / 245,569 tokens for
    ``train`` / ``valid`` / ``test`` (36,718 / 3,760 / 4,358 lines) and a 33,278-word vocabulary (the corpus
    already contains ``<unk>``). ``eos=None`` returns the bare whitespace tokens (empty lines stay ``[]``).
    """
    return _wikitext(WIKITEXT_2, _WT2_FILES, split, root, eos)


def wikitext103(split: str = "train", root: Root = None, eos: str | None = EOS) -> list[list[str]]:
    """WikiText-103 (Merity et al. 2016, tokenised v1) as lines of tokens, with :func:`wikitext2`'s convention.

    ``train`` has 1,801,350 lines (about 103M tokens: several GB as Python lists -- a ``full``-scale reader);
    ``valid`` / ``test`` have 3,760 / 4,358.
    """
    return _wikitext(WIKITEXT_103, _WT103_FILES, split, root, eos)


def tiny_shakespeare(root: Root = None) -> str:
    """Tiny Shakespeare (Karpathy 2015, ``input.txt``) as one string of 1,115,394 characters (65 distinct)."""
    return local_file(TINY_SHAKESPEARE, _SHAKESPEARE, root).read_text(encoding="utf-8")


def text8(root: Root = None, line_words: int = 10_000) -> list[list[str]]:
    """text8 (Mahoney 2006) as lines of ``line_words`` words (the last one shorter): ``list`` of ``list[str]``.

    text8 is one line of about 17M lower-case words; 10,000-word lines are the chunks gensim's ``Text8Corpus``
    reads (a word2vec window never crosses one).
    """
    if line_words < 1:
        raise ValueError(f"line_words must be >= 1, got {line_words}")
    words = local_file(TEXT8, _TEXT8, root).read_text(encoding="ascii").split()
    return [words[i:i + line_words] for i in range(0, len(words), line_words)]


_TITLE = re.compile(r"^ = [^=].* = $")  # " = Title = ": a level-1 heading starts a new article
_HEADING = re.compile(r"^ =( =)+ .* =( =)+ $")  # " = = Section = = ", deeper levels
_SENTENCE_END = re.compile(r"(?<= [.!?]) (?=[^a-z])")  # after a spaced full stop, before a non-lower-case token
_AT_JOIN = re.compile(r" @(.)@ ")  # WikiText's " @-@ ", " @,@ ", " @.@ " (joined number and word parts)


def wikitext_detokenize(line: str) -> str:
    """Undo two WikiText conventions for a subword tokenizer: ``<unk>`` -> ``[UNK]``, ``3 @,@ 000`` -> ``3,000``."""
    return _AT_JOIN.sub(r"\1", line.replace("<unk>", "[UNK]"))


def wikitext_documents(split: str = "train", root: Root = None,
                       max_documents: int | None = None) -> list[list[str]]:
    """WikiText-2 as documents (articles) of sentences, headings dropped: ``[[sentence, ...], ...]``.

    BERT pre-trains on document-level text so that next-sentence pairs are contiguous (Devlin et al. 2019, §3.1).
    An article starts at each level-1 heading (`` = Title = ``); paragraphs are split into sentences after a
    spaced ``.``/``!``/``?`` followed by a token that does not start lower-case (so "St. louis" stays whole more
    often than not; the split does not need to be perfect, only to keep text contiguous). Text goes through
    :func:`wikitext_detokenize`. WikiText-2 train gives about 600 articles; ``max_documents`` stops early.
    """
    docs: list[list[str]] = []
    for tokens in wikitext2(split, root=root, eos=None):
        if not tokens:
            continue
        line = " " + " ".join(tokens) + " "
        if _TITLE.match(line) and not _HEADING.match(line):
            if max_documents is not None and len(docs) == max_documents:
                break
            docs.append([])
            continue
        if _HEADING.match(line):
            continue
        if not docs:
            docs.append([])
        text = wikitext_detokenize(" ".join(tokens))
        docs[-1].extend(s for s in _SENTENCE_END.split(text) if s.strip())
    return [d for d in docs if d]
