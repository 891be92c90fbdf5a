"""The dataset registry: every fact the book relies on about its data, in one place.

For each dataset: canonical download address(es) with the checksum as its publisher states it (md5, sha1 or
sha256, and who publishes it), size where known, how the download maps to local files, the sha256 of every
final local file, licence, citation and a short description. Local layout = the offline mirror's layout
(``shared/data/<name>/``), so ``path("wikitext-2") / "wiki.train.tokens"`` works however the folder was filled.
Sizes and sha256 of local files come from the mirror's ``SOURCE.md`` files (recomputed on the mirror by
``tests/test_data_registry.py``); published checksums come from torchtext, d2l and Hugging Face datasets as
recorded in ``shared/data/README.md``.

Where a canonical download cannot reproduce the mirror's bytes the entry's ``notes`` say so, and the
download is verified as far as the published facts allow (see :class:`~shoulders.data.entry.Member`).
GitHub-hosted files list the repository's usual address first and a commit-pinned address second.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .entry import Checksum, Citation, Dataset, Download, LocalFile, Member

__all__ = ["REGISTRY"]

_RAW = "https://raw.githubusercontent.com"

_SOCHER_2013 = Citation(
    authors="Richard Socher, Alex Perelygin, Jean Wu, Jason Chuang, Christopher D. Manning, Andrew Ng, "
    "Christopher Potts",
    year=2013,
    title="Recursive Deep Models for Semantic Compositionality Over a Sentiment Treebank",
    venue="EMNLP",
)

WIKITEXT_2 = Dataset(
    name="wikitext-2",
    title="WikiText-2 (v1, tokenised)",
    description="About 2M tokens of verified Good and Featured Wikipedia articles, tokenised, rare words as <unk>; "
    "the book's word-level language-modelling corpus (36,718 / 3,760 / 4,358 lines).",
    homepage="https://blog.salesforceairesearch.com/the-wikitext-long-term-dependency-language-modeling-dataset/",
    licence="CC BY-SA 4.0",
    citations=(Citation(
        authors="Stephen Merity, Caiming Xiong, James Bradbury, Richard Socher",
        year=2016,
        title="Pointer Sentinel Mixture Models",
        venue="arXiv:1609.07843",
        url="https://arxiv.org/abs/1609.07843",
    ),),
    files=(
        LocalFile("wiki.train.tokens", 10_797_148, "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f"),
        LocalFile("wiki.valid.tokens", 1_121_681, "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8"),
        LocalFile("wiki.test.tokens", 1_256_449, "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0"),
    ),
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
        members=(
            Member("wikitext-2/wiki.train.tokens", "wiki.train.tokens"),
            Member("wikitext-2/wiki.valid.tokens", "wiki.valid.tokens"),
            Member("wikitext-2/wiki.test.tokens", "wiki.test.tokens"),
        ),
    ),),
    aliases=("wikitext2", "wikitext", "wt2", "wikitext-2-v1"),
    notes="The mirror's train file was rebuilt from token ids and matches pytorch/examples' git blob id; the zip "
    "itself could not be checked offline. Some users report the S3 address no longer answers.",
)

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
    files=(LocalFile("input.txt", 1_115_394, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"),),
    downloads=(Download(
        urls=(
            f"{_RAW}/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
            f"{_RAW}/karpathy/char-rnn/6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e/data/tinyshakespeare/input.txt",
        ),
        filename="input.txt",
        format="file",
        size=1_115_394,
        keep_as="input.txt",
    ),),
    aliases=("tinyshakespeare", "shakespeare", "tiny_shakespeare"),
)

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
    files=(
        LocalFile("train.tsv", 3_806_081, "48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1"),
        LocalFile("dev.tsv", 94_931, "54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0"),
    ),
    downloads=(Download(
        urls=("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip",),
        filename="SST-2.zip",
        format="zip",
        checksum=Checksum("md5", "9f81648d4199384278b86e315dac217c", "torchtext datasets/sst2.py"),
        members=(Member("SST-2/train.tsv", "train.tsv"), Member("SST-2/dev.tsv", "dev.tsv")),
    ),),
    aliases=("sst2", "sst-2", "glue-sst2", "glue-sst-2"),
    notes="GLUE's unlabelled test.tsv is not kept. Mirror files equal the Git-LFS sha256 recorded for GLUE's "
    "SST-2/{train,dev}.tsv in two independent repositories.",
)

SST_TREES = Dataset(
    name="sst-trees",
    title="Stanford Sentiment Treebank (PTB-format trees, SST-5)",
    description="11,855 sentences as binarised parse trees with a 0-4 sentiment label on every phrase node "
    "(8,544 / 1,101 / 2,210 trees); the original zip is kept next to the extracted splits.",
    homepage="https://nlp.stanford.edu/sentiment/",
    licence="None stated in the sources examined",
    citations=(_SOCHER_2013,),
    files=(
        LocalFile("trainDevTestTrees_PTB.zip", 789_539,
                  "5c613a4f673fc74097d523a2c83f38e0cc462984d847b82c7aaf36b01cbbbfcc"),
        LocalFile("train.txt", 2_160_058, "e2f3f41b0b1e6d4dddc0effe3bfc2d27ed8928079aa9a03d652311614fc5feb7"),
        LocalFile("dev.txt", 280_825, "0e9336aed6e4730e19f58d00a77b3f0297efdb755f7b5e598c98a05e3f97ea40"),
        LocalFile("test.txt", 559_614, "6e54806dee95cf80cd918e7dfb3f6770f6df24bf826f289a4d1f709e1c8f6761"),
    ),
    downloads=(Download(
        urls=("http://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip",),
        filename="trainDevTestTrees_PTB.zip",
        format="zip",
        checksum=Checksum("md5", "5c3b23ce88089053fd3efeb4a34f614d", "torchtext former datasets/sst.py"),
        size=789_539,
        keep_as="trainDevTestTrees_PTB.zip",
        members=(
            Member("trees/train.txt", "train.txt"),
            Member("trees/dev.txt", "dev.txt"),
            Member("trees/test.txt", "test.txt"),
        ),
    ),),
    aliases=("sst", "sst5", "sst-5", "sst-ptb"),
)

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
    files=(
        LocalFile("wnut17train.conll", 493_781, "731820e13f71af324c6b55a1575ec2ce59fbaa2a0806f8f0400b98d56cd6a7a5"),
        LocalFile("emerging.dev.conll", 114_749, "e053b752b8155113ca66e7db08af5f2f5f43ab993694e4774f1ec5bad42312d8"),
        LocalFile("emerging.test.annotated", 192_425,
                  "2aa79b764e56ec9264a1b30fdd9b70195bd00ff400b62edd8f399d5f13c178f0"),
    ),
    downloads=tuple(
        Download(
            urls=(
                f"{_RAW}/leondz/emerging_entities_17/master/{name}",
                f"{_RAW}/leondz/emerging_entities_17/e52a2d2a71ac1a051ca2d532eef28653c5c02603/{name}",
            ),
            filename=name,
            format="file",
            size=size,
            keep_as=name,
        )
        for name, size in (
            ("wnut17train.conll", 493_781),
            ("emerging.dev.conll", 114_749),
            ("emerging.test.annotated", 192_425),
        )
    ),
    aliases=("wnut-17", "wnut_17", "wnut"),
)

SQUAD_V11 = Dataset(
    name="squad-v1.1",
    title="SQuAD v1.1 (dev set)",
    description="Extractive question answering over Wikipedia paragraphs; the dev set only: 48 articles, "
    "2,067 paragraphs, 10,570 questions with up to several reference answers each.",
    homepage="https://rajpurkar.github.io/SQuAD-explorer/",
    licence="CC BY-SA 4.0",
    citations=(Citation(
        authors="Pranav Rajpurkar, Jian Zhang, Konstantin Lopyrev, Percy Liang",
        year=2016,
        title="SQuAD: 100,000+ Questions for Machine Comprehension of Text",
        venue="EMNLP",
    ),),
    files=(LocalFile("dev-v1.1.json", 4_854_279, "95aa6a52d5d6a735563366753ca50492a658031da74f301ac5238b03966972c9"),),
    downloads=(Download(
        urls=("https://rajpurkar.github.io/SQuAD-explorer/dataset/dev-v1.1.json",),
        filename="dev-v1.1.json",
        format="file",
        checksum=Checksum("md5", "3e85deb501d4e538b6bc56f786231552", "torchtext datasets/squad1.py"),
        size=4_854_279,
        keep_as="dev-v1.1.json",
    ),),
    aliases=("squad", "squad1", "squad-v1", "squad1.1", "squad-1.1"),
    notes="The training set (train-v1.1.json, md5 981b29407e0affa3b1b156f72073b945) is not part of this entry.",
)

SNLI = Dataset(
    name="snli",
    title="SNLI 1.0 (dev and test)",
    description="Stanford Natural Language Inference: premise/hypothesis pairs labelled entailment, neutral or "
    "contradiction; dev and test, 10,000 pairs each, as gzipped JSON lines.",
    homepage="https://nlp.stanford.edu/projects/snli/",
    licence="CC BY-SA 4.0",
    citations=(Citation(
        authors="Samuel R. Bowman, Gabor Angeli, Christopher Potts, Christopher D. Manning",
        year=2015,
        title="A large annotated corpus for learning natural language inference",
        venue="EMNLP",
    ),),
    files=(
        LocalFile("snli_1.0_dev.jsonl.gz", 1_004_730,
                  "e5cfcc71b4846c40e06bae364a13312adeb434884e9a7cedf67037bdd212e39d",
                  content_sha256="9c03faff70182ef086ebfeed2cffbabb5fcc6a84a8b3314decbbb5b01f07f4bf"),
        LocalFile("snli_1.0_test.jsonl.gz", 1_005_357,
                  "ef5f0721f18e6aafd80f0d67aa2ef9784277aa08ba6a582c03fc381367282ac5",
                  content_sha256="1147550151ca8b16ddb31d8dc0e739a670a65f7c3e64aac5951eaeff103fb220"),
    ),
    downloads=(Download(
        urls=("https://nlp.stanford.edu/projects/snli/snli_1.0.zip",),
        filename="snli_1.0.zip",
        format="zip",
        checksum=Checksum("sha1", "9fcde07509c7e87ec61c640c1b2753d9041758e4", "d2l DATA_HUB['SNLI']"),
        also_published=(Checksum("md5", "981c3df556bbaea3f17f752456d0088c", "torchtext former datasets/snli.py"),),
        members=(
            Member("snli_1.0/snli_1.0_dev.jsonl", "snli_1.0_dev.jsonl.gz", gzip=True, check="content"),
            Member("snli_1.0/snli_1.0_test.jsonl", "snli_1.0_test.jsonl.gz", gzip=True, check="content"),
        ),
    ),),
    aliases=("snli-1.0", "snli1.0", "snli_1.0"),
    notes="The official zip holds plain .jsonl files; a download gzips the dev/test members, so the .gz bytes "
    "differ from the mirror's while the decompressed text is checked against the mirror's (sha256 of the "
    "uncompressed file). The training split in the zip (550,152 pairs) is not kept.",
)

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
    files=(
        LocalFile("train.en.gz", 568_929, "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f"),
        LocalFile("train.de.gz", 637_044, "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6"),
        LocalFile("val.en.gz", 21_650, "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28"),
        LocalFile("val.de.gz", 24_681, "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a"),
        LocalFile("test_2016_flickr.en.gz", 21_077, "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9"),
        LocalFile("test_2016_flickr.de.gz", 22_890, "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8"),
        LocalFile("torchtext-wmt16/training.tar.gz", 1_207_136,
                  "20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e"),
        LocalFile("torchtext-wmt16/validation.tar.gz", 46_329,
                  "a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c"),
        LocalFile("torchtext-wmt16/mmt16_task1_test.tar.gz", 67_079,
                  "6d1ca1dba99e2c5dd54cae1226ff11c2551e6ce63527ebb072a1f70f72a5cd36"),
    ),
    downloads=tuple(
        Download(
            urls=(f"{_RAW}/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/raw/{name}",),
            filename=name,
            format="file",
            size=size,
            keep_as=name,
        )
        for name, size in (
            ("train.en.gz", 568_929),
            ("train.de.gz", 637_044),
            ("val.en.gz", 21_650),
            ("val.de.gz", 24_681),
            ("test_2016_flickr.en.gz", 21_077),
            ("test_2016_flickr.de.gz", 22_890),
        )
    ) + tuple(
        Download(
            urls=(
                f"{_RAW}/neychev/small_DL_repo/master/datasets/Multi30k/{name}",
                f"{_RAW}/neychev/small_DL_repo/1cc0d4bf4c97119c73ae93411d361c040ce1394c/datasets/Multi30k/{name}",
            ),
            filename=name,
            format="file",
            checksum=Checksum("sha256", digest, "torchtext datasets/multi30k.py (hash_type sha256)"),
            size=size,
            keep_as=f"torchtext-wmt16/{name}",
        )
        for name, size, digest in (
            ("training.tar.gz", 1_207_136, "20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e"),
            ("validation.tar.gz", 46_329, "a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c"),
            ("mmt16_task1_test.tar.gz", 67_079, "6d1ca1dba99e2c5dd54cae1226ff11c2551e6ce63527ebb072a1f70f72a5cd36"),
        )
    ),
    aliases=("multi30k-en-de", "multi30k-de-en", "m30k"),
    notes="The torchtext archives were first published at http://www.quest.dcs.shef.ac.uk/wmt16_files_mmt/; "
    "they are kept unextracted, as in the mirror.",
)

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
    files=(
        LocalFile("fra.txt", 11_669_748, "0bb85dbaa1c896844649094d7eaf2e34bee34e84fe362b26ce7e8f2e12aae104"),
        LocalFile("_about.txt", 1_441, "79f39a53dbddaf7ab43c801f231089174a611f23987244056f9e3cb5aa79358b"),
    ),
    downloads=(Download(
        urls=("http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip",),
        filename="fra-eng.zip",
        format="zip",
        checksum=Checksum("sha1", "94646ad1522d915e7b0f9296181140edcf86a4f5", "d2l DATA_HUB['fra-eng']"),
        members=(
            Member("fra-eng/fra.txt", "fra.txt", check="archive"),
            Member("fra-eng/_about.txt", "_about.txt", check="archive"),
        ),
    ),),
    aliases=("tatoeba", "fra-eng", "eng-fra", "anki-fra-eng"),
    notes="The mirror's files came from a re-packed zip with d2l's layout; byte equality with d2l's zip is not "
    "verified, so a download is vouched for by d2l's SHA-1 of the zip, not by the mirror's sha256.",
)

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
    files=(LocalFile("balanced-copa-dev-all.xml", 208_323,
                     "2091dce8a2923b8530804644780ebe01fd1ae30342eb2562a3821786274b5b25"),),
    downloads=(Download(
        urls=(f"{_RAW}/Balanced-COPA/Balanced-COPA/92c2ec6d792b3e43a741d4e94ceb731b25f9a719/"
              "balanced-copa-dev-all.xml",),
        filename="balanced-copa-dev-all.xml",
        format="file",
        size=208_323,
        keep_as="balanced-copa-dev-all.xml",
    ),),
    aliases=("copa", "b-copa", "balanced-copa", "bcopa"),
)

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
    files=(LocalFile("text8", 100_000_000, None),),
    downloads=(Download(
        urls=("http://mattmahoney.net/dc/text8.zip", "https://data.deepai.org/text8.zip"),
        filename="text8.zip",
        format="zip",
        size=31_344_016,
        members=(Member("text8", "text8"),),
    ),),
    aliases=("text-8",),
    mirrored=False,
    notes="Not in the offline mirror. No checksum is published: a download is verified by sizes only (the zip "
    "is 31,344,016 bytes, its member text8 exactly 100,000,000 bytes); pin a sha256 once downloaded.",
)

_ENTRIES: tuple[Dataset, ...] = (
    WIKITEXT_2,
    TINY_SHAKESPEARE,
    SST2_GLUE,
    SST_TREES,
    WNUT17,
    SQUAD_V11,
    SNLI,
    MULTI30K,
    TATOEBA_FRA_ENG,
    COPA_BALANCED,
    TEXT8,
)

#: name -> entry, in the book's order. Read-only: pass your own :class:`Dataset` to ``path()`` instead.
REGISTRY: Mapping[str, Dataset] = MappingProxyType({entry.name: entry for entry in _ENTRIES})
