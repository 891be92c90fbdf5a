"""A small SentEval: one evaluation for every sentence encoder of the book (Conneau & Kiela 2018, "SentEval: an
evaluation toolkit for universal sentence representations").

SentEval's recipe, kept: the encoder is **frozen**; each sentence becomes one vector; a logistic regression is
fitted on the training vectors, its L2 penalty chosen on a validation set from one grid, and the test accuracy at
that penalty is the score. Pair tasks use InferSent's features (Conneau et al. 2017, §3.2) of the two sentence
vectors u and v:

    [u, v, |u - v|, u * v]                       (:func:`shoulders.models.infersent.pair_features`, re-exported)

Three tasks, the same splits and the same grid for every encoder:

* ``sst2`` -- the sentence-level binary Stanford Sentiment Treebank (Socher et al. 2013) from the trees: 6,920
  training sentences, the 872 dev sentences pick the penalty, the 1,821 test sentences are scored;
* ``sst5`` -- the same treebank's five classes (8,544 / 1,101 / 2,210);
* ``snli`` -- natural language inference (Bowman et al. 2015). The training split (550k pairs) is not in the
  offline mirror, so at ``smoke`` and ``cpu`` the classifier trains on part of SNLI *dev* and picks its penalty on
  another part (disjoint, drawn with ``cfg.seed``), and is scored on SNLI test; at ``full`` it trains on the
  canonical training split and picks on dev, as SentEval does.

Departures from SentEval, said once: SentEval trains its SST-2 classifier on the 67k labelled phrases and uses an
MLP option and k-fold search for some tasks; here every task is sentence-level logistic regression with a
validation split, which is the cheaper of its two protocols and the one its linear results use.
"""
from __future__ import annotations

import dataclasses
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import torch
from tqdm.auto import tqdm

from ..config import Config, ConfigError
from ..data.sentiment import sst_trees
from ..data.tasks import snli
from ..models.infersent import pair_features
from ..text.tokenize import simple_words
from .._scale import scale as current_scale
from .ledger import read as read_ledger
from .ledger import record as record_result
from .probe import fit_probe

__all__ = ["SENTEVAL_TASKS", "SentEvalConfig", "SentSplit", "SentTask", "TaskResult", "bag_of_vectors",
           "evaluate_encoder", "ledger_results", "load_tasks", "pair_features", "results_table"]

SENTEVAL_TASKS = ("sst2", "sst5", "snli")

Encoder = Callable[[Sequence[str]], torch.Tensor]
"""A frozen sentence encoder: a list of N sentences (raw strings) -> their vectors ``(N, d)``."""


@dataclasses.dataclass
class SentEvalConfig(Config):
    """What the small SentEval reads and how it searches (one preset per scale; the same for every encoder)."""

    tasks: tuple[str, ...] = SENTEVAL_TASKS
    sst_train: int = 0            # SST training sentences kept, drawn with ``seed`` (0: all)
    sst_test: int = 0             # SST test sentences scored (0: all)
    snli_source: str = "dev"      # where the pair classifier's training pairs come from: "dev" (part of it) or "train"
    snli_train: int = 6_000       # training pairs (0: all of the source)
    snli_valid: int = 2_000       # pairs that pick the penalty (from dev; 0: all of dev when the source is train)
    snli_test: int = 0            # SNLI test pairs scored (0: all 9,824)
    # penalties tried (per weight, on standardised features). Seven decades: with the four of 1e-5..1e-2 the
    # 512-dimensional Quick-thoughts vectors chose the largest on every task at cpu (2026-12-03), a search stopped
    # at its edge; up to 10, no encoder of chapters 7-8 chose the largest (2026-12-03), for about 15% more
    # fitting time (chapter 7's page 4.9 -> 5.6 minutes with its new Quick-thoughts giant, chapter 8's 16.3 -> 18.0)
    l2_grid: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
    max_iter: int = 200           # L-BFGS iterations per fit
    encode_chunk: int = 512       # sentences handed to the encoder at a time
    seed: int = 0

    # what the chapters assert of their SentEval tables: the tasks on which every encoder must beat the majority
    # class (at smoke the encoders read 1,000,000 words or 60 articles for seconds: SST-5's five classes stay out
    # of reach, SST-2 and SNLI do not)
    page_presets: ClassVar = {
        "smoke": {"above_majority": ("sst2", "snli")},
        "cpu": {"above_majority": SENTEVAL_TASKS},
        "full": {"above_majority": SENTEVAL_TASKS},
    }
    presets: ClassVar = {
        "smoke": dict(sst_train=2_000, sst_test=1_000, snli_train=2_000, snli_valid=1_000, snli_test=2_000,
                      l2_grid=(1e-4, 1e-2), max_iter=100),
        "cpu": dict(),
        "full": dict(snli_source="train", snli_train=0, snli_valid=0),
    }

    def validate(self) -> None:
        unknown = sorted(set(self.tasks) - set(SENTEVAL_TASKS))
        if unknown or not self.tasks:
            raise ConfigError(f"tasks must be some of {SENTEVAL_TASKS}, got {self.tasks}")
        if self.snli_source not in ("dev", "train"):
            raise ConfigError(f"snli_source must be 'dev' or 'train', got {self.snli_source!r}")
        sizes = dict(sst_train=self.sst_train, sst_test=self.sst_test, snli_train=self.snli_train,
                     snli_valid=self.snli_valid, snli_test=self.snli_test)
        if any(v < 0 for v in sizes.values()):
            raise ConfigError(f"sizes must be >= 0 (0: all), got {sizes}")
        if self.snli_source == "dev" and (self.snli_train < 1 or self.snli_valid < 1):
            raise ConfigError("with snli_source='dev', snli_train and snli_valid must both be positive: they are "
                              "disjoint parts of the 9,842 dev pairs")
        if not self.l2_grid or any(v < 0 for v in self.l2_grid):
            raise ConfigError(f"l2_grid must hold penalties >= 0, got {self.l2_grid}")
        if self.max_iter < 1 or self.encode_chunk < 1:
            raise ConfigError("max_iter and encode_chunk must be positive")


@dataclasses.dataclass
class SentSplit:
    """One split of a task: sentences ``a`` (and ``b`` for a pair task) and integer labels."""

    a: list[str]
    labels: list[int]
    b: list[str] | None = None

    def __post_init__(self) -> None:
        if len(self.a) != len(self.labels) or (self.b is not None and len(self.b) != len(self.a)):
            raise ValueError(f"a split needs one label (and one second sentence) per sentence: {len(self.a)} "
                             f"sentences, {len(self.labels)} labels, "
                             f"{'no' if self.b is None else len(self.b)} second sentences")
        if not self.a:
            raise ValueError("a split needs at least one example")

    def take(self, n: int, seed: int) -> SentSplit:
        """``n`` examples drawn without replacement with ``seed`` (all of them when ``n`` is 0 or too large)."""
        if n <= 0 or n >= len(self.a):
            return self
        keep = sorted(random.Random(seed).sample(range(len(self.a)), n))
        return SentSplit([self.a[i] for i in keep], [self.labels[i] for i in keep],
                         None if self.b is None else [self.b[i] for i in keep])


@dataclasses.dataclass
class SentTask:
    """A SentEval task: its three splits, its classes and whether it reads sentence pairs."""

    name: str
    classes: int
    train: SentSplit
    valid: SentSplit
    test: SentSplit

    @property
    def pair(self) -> bool:
        return self.train.b is not None

    def splits(self) -> dict[str, SentSplit]:
        return {"train": self.train, "valid": self.valid, "test": self.test}

    def sentences(self) -> list[str]:
        """Every distinct sentence of the task, in first-seen order (an SNLI premise recurs with each hypothesis;
        it is encoded once)."""
        seen: dict[str, None] = {}
        for split in self.splits().values():
            seen.update(dict.fromkeys(split.a))
            seen.update(dict.fromkeys(split.b or ()))
        return list(seen)

    def majority(self) -> float:
        """Test accuracy (%) of always answering the training set's most frequent label."""
        top = Counter(self.train.labels).most_common(1)[0][0]
        return 100 * sum(y == top for y in self.test.labels) / len(self.test.labels)


def load_tasks(cfg: SentEvalConfig | None = None) -> dict[str, SentTask]:
    """The tasks of ``cfg`` (default: the current scale's preset) with their splits drawn as it says."""
    cfg = cfg if cfg is not None else SentEvalConfig.preset()
    tasks: dict[str, SentTask] = {}
    for name in cfg.tasks:
        if name in ("sst2", "sst5"):
            binary = name == "sst2"
            split = {s: SentSplit(*sst_trees(s, binary=binary)) for s in ("train", "dev", "test")}
            tasks[name] = SentTask(name, 2 if binary else 5, split["train"].take(cfg.sst_train, cfg.seed),
                                   split["dev"], split["test"].take(cfg.sst_test, cfg.seed))
        else:
            p, h, y = snli("dev")
            dev = SentSplit(p, y, h)
            test = _pairs(snli("test")).take(cfg.snli_test, cfg.seed)
            if cfg.snli_source == "dev":
                if cfg.snli_train + cfg.snli_valid > len(dev.a):
                    raise ConfigError(f"snli_train + snli_valid = {cfg.snli_train + cfg.snli_valid} pairs, but "
                                      f"SNLI dev holds {len(dev.a)}")
                order = list(range(len(dev.a)))
                random.Random(cfg.seed).shuffle(order)
                train = _subset(dev, sorted(order[: cfg.snli_train]))
                valid = _subset(dev, sorted(order[cfg.snli_train: cfg.snli_train + cfg.snli_valid]))
            else:
                train = _pairs(snli("train")).take(cfg.snli_train, cfg.seed)
                valid = dev.take(cfg.snli_valid, cfg.seed)
            tasks[name] = SentTask(name, 3, train, valid, test)
    return tasks


def _pairs(data: tuple[list[str], list[str], list[int]]) -> SentSplit:
    premises, hypotheses, labels = data
    return SentSplit(premises, labels, hypotheses)


def _subset(split: SentSplit, keep: Sequence[int]) -> SentSplit:
    return SentSplit([split.a[i] for i in keep], [split.labels[i] for i in keep],
                     None if split.b is None else [split.b[i] for i in keep])


@dataclasses.dataclass
class TaskResult:
    """One encoder on one task: test and validation accuracy (%) at the chosen penalty, every penalty's
    validation accuracy, the majority-class floor and the seconds spent encoding and fitting."""

    task: str
    test: float
    valid: float
    l2: float
    valid_by_l2: dict[float, float]
    majority: float
    dim: int
    n_train: int
    encode_seconds: float
    fit_seconds: float


def _encode_all(encode: Encoder, sentences: list[str], chunk: int, label: str, progress: bool) -> torch.Tensor:
    parts = []
    bar = tqdm(total=len(sentences), desc=f"encode {label}", unit="sent", disable=not progress, leave=False)
    for s in range(0, len(sentences), chunk):
        batch = sentences[s: s + chunk]
        with torch.no_grad():
            out = encode(batch)
        out = torch.as_tensor(out)
        if out.dim() != 2 or out.shape[0] != len(batch):
            raise ValueError(f"{label}: the encoder returned {tuple(out.shape)} for {len(batch)} sentences; it must "
                             "return one vector per sentence, (N, d)")
        if not torch.isfinite(out).all():
            bad = [batch[i] for i in (~torch.isfinite(out).all(-1)).nonzero().flatten()[:3].tolist()]
            raise ValueError(f"{label}: the encoder returned NaN or infinite values, e.g. for {bad}")
        parts.append(out.detach().float().cpu())
        bar.update(len(batch))
    bar.close()
    return torch.cat(parts)


def evaluate_encoder(encode: Encoder, tasks: Mapping[str, SentTask], cfg: SentEvalConfig | None = None, *,
                     name: str | None = None, chapter: str | None = None, progress: bool = True,
                     **record_extra: Any) -> dict[str, TaskResult]:
    """Score the frozen ``encode`` on every task of ``tasks`` (:func:`load_tasks`): encode each distinct sentence
    once, fit one logistic regression per penalty of ``cfg.l2_grid`` on the training vectors (pair tasks:
    :func:`pair_features`), keep the penalty with the best validation accuracy (the smaller one on a tie) and
    report its test accuracy. With ``name`` and ``chapter`` each task's test accuracy goes into the ledger
    (task ``senteval-<task>``; ``record_extra`` joins the entries)."""
    cfg = cfg if cfg is not None else SentEvalConfig.preset()
    if (name is None) != (chapter is None):
        raise ValueError("give both name and chapter to record the results in the ledger, or neither")
    results: dict[str, TaskResult] = {}
    for task in tasks.values():
        t0 = time.perf_counter()
        sentences = task.sentences()
        vectors = _encode_all(encode, sentences, cfg.encode_chunk, f"{name or 'encoder'} on {task.name}", progress)
        row = {s: i for i, s in enumerate(sentences)}
        encode_seconds = time.perf_counter() - t0

        def features(split: SentSplit) -> torch.Tensor:
            u = vectors[[row[s] for s in split.a]]  # (N, d)
            return u if split.b is None else pair_features(u, vectors[[row[s] for s in split.b]])

        x = {k: features(s) for k, s in task.splits().items()}
        y = {k: torch.tensor(s.labels) for k, s in task.splits().items()}
        t0 = time.perf_counter()
        probes = {l2: fit_probe(x["train"], y["train"], l2, cfg.max_iter, classes=task.classes)
                  for l2 in sorted(cfg.l2_grid)}
        valid = {l2: p.accuracy(x["valid"], y["valid"]) for l2, p in probes.items()}
        best = max(valid, key=lambda l2: (valid[l2], -l2))
        results[task.name] = TaskResult(task.name, probes[best].accuracy(x["test"], y["test"]), valid[best], best,
                                        valid, task.majority(), int(vectors.shape[1]), len(task.train.a),
                                        encode_seconds, time.perf_counter() - t0)
        if name is not None and chapter is not None:
            r = results[task.name]
            record_result("accuracy", r.test, model=name, task=f"senteval-{task.name}", split="test",
                          chapter=chapter, wall_time_s=r.encode_seconds + r.fit_seconds, l2=r.l2, valid=r.valid,
                          n_train=r.n_train, dim=r.dim, **record_extra)
    return results


def results_table(results: Mapping[str, Mapping[str, TaskResult]]) -> str:
    """A Markdown table: one row per encoder (``results``: encoder name -> :func:`evaluate_encoder`'s answer),
    one column per task (test accuracy %, the chosen penalty in small type), and the majority-class floor."""
    tasks = list(dict.fromkeys(t for per in results.values() for t in per))
    if not tasks:
        raise ValueError("no results to tabulate")
    head = "| encoder | dim | " + " | ".join(tasks) + " |\n|---|---|" + "---|" * len(tasks) + "\n"
    rows = []
    for name, per in results.items():
        dim = next(iter(per.values())).dim
        cells = [f"{per[t].test:.1f} <sub>L2 {per[t].l2:g}</sub>" if t in per else "—" for t in tasks]
        rows.append(f"| {name} | {dim:,} | " + " | ".join(cells) + " |")
    floor = {t: next(per[t].majority for per in results.values() if t in per) for t in tasks}
    rows.append("| majority class | — | " + " | ".join(f"{floor[t]:.1f}" for t in tasks) + " |")
    return head + "\n".join(rows)


def ledger_results(chapter: str, scale: str | None = None, path: str | None = None) -> dict[str, dict[str, float]]:
    """What :func:`evaluate_encoder` recorded for ``chapter`` at ``scale`` (default: the current scale), read back
    from the results ledger (``path``: another ledger file): encoder name -> task -> test accuracy %, the newest
    entry of each. Nothing recorded yet: ``{}``. How a page shows another page's encoders without retyping them."""
    out: dict[str, dict[str, float]] = {}
    for e in read_ledger(path, chapter=chapter, scale=scale or current_scale()):  # oldest first: newer overwrite
        if e["metric"] == "accuracy" and e["split"] == "test" and e["task"].startswith("senteval-"):
            out.setdefault(e["model"], {})[e["task"][len("senteval-"):]] = float(e["value"])
    return out


def bag_of_vectors(vectors: torch.Tensor, stoi: Mapping[str, int],
                   tokenize: Callable[[str], list[str]] = simple_words) -> Encoder:
    """The baseline every sentence encoder is held against: the mean of the sentence's word vectors
    (``vectors`` ``(V, d)``, a word's row ``stoi[word]``; words outside ``stoi`` are skipped; a sentence with no
    known word is the zero vector). ``tokenize`` splits a raw sentence (default: lower-cased words and
    punctuation, :func:`shoulders.text.simple_words`)."""
    if vectors.dim() != 2:
        raise ValueError(f"vectors must be (V, d), got {tuple(vectors.shape)}")
    table = vectors.detach().float().cpu()

    def encode(sentences: Sequence[str]) -> torch.Tensor:
        out = torch.zeros(len(sentences), table.shape[1])  # (N, d)
        for i, s in enumerate(sentences):
            ids = [stoi[w] for w in tokenize(s) if w in stoi]
            if ids:
                out[i] = table[ids].mean(0)
        return out

    return encode
