"""The scripts in benchmarks/ cannot rot: each one imports, and each one runs in its smallest mode (seconds).

``benchmarks/full_plan.py`` and ``benchmarks/gpt.py`` have ``--tiny``; the others are run with their smallest
arguments (``benchmarks/ngram.py`` on 2,000 training lines, without KenLM even where ``lmplz`` is installed). The
runs that read WikiText-2 are skipped without the offline data mirror.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from shoulders import heads
from shoulders.data import mirror_folder
from shoulders.models.bert import BertConfig, BertModel
from shoulders.recipes.finetune import BertFinetuningConfig

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def load(path: Path):
    name = f"benchmark_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)  # no __main__: defines, runs nothing
    except BaseException:
        del sys.modules[name]
        raise
    return module


def run(*args: str, timeout: int = 180) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                                  f"{proc.stderr[-3000:]}")
    return proc.stdout


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_imports(path):
    assert callable(load(path).main)


def test_full_plan_tiny():
    plan = load(ROOT / "benchmarks" / "full_plan.py")
    expected = plan.runs(tiny=True)
    assert {r.chapter for r in expected} == {2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 14, 15, 16}
    out = run("benchmarks/full_plan.py", "--tiny", "--markdown", "--threads", "1")
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    for r in expected:
        name = (r.name + (f" (x{r.runs} runs)" if r.runs > 1 else "")).replace("|", "\\|")  # escaped in Markdown
        assert any(line.startswith(f"| {r.chapter} | {name} |") for line in rows), f"no row for ch {r.chapter} {name}"
    for chapter in {r.chapter for r in expected}:  # the chapter totals: | ch | T4 | A100 | H100 | budget |
        assert any(line.startswith(f"| {chapter} | ") and line.count("|") == len(plan.GPUS) + 3
                   for line in rows), f"no total for chapter {chapter}"


def test_cove_levers_tiny():
    # may train page 9's two smoke giants, and trains the script's two variants for a few steps each
    out = run("benchmarks/cove_levers.py", "--tiny", "--threads", "1", timeout=400)
    rows = [line for line in out.splitlines() if line.startswith("| ") and "CoVe" not in line.split("|")[1]]
    assert len([r for r in rows if "cove_" in r]) == 16  # every lever's row, with both inputs scored
    assert sum("cove_small_sst" in r for r in rows) == 3  # the variant giant on GloVe that read SST
    assert sum("phrases" in r for r in rows) == 6         # SST-2's phrases, the paper's training set
    assert sum("cove_large, train_pairs=2000, steps=40" in r for r in rows) == 1  # CoVe-L's recipe, fewer pairs


def test_ulmfit_levers_tiny():
    out = run("benchmarks/ulmfit_levers.py", "--tiny", "--threads", "1")
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line[:3] in ("| 1", "| 3")]
    # 300 sentences at tiny, so the larger budgets are the same runs as a row before them (printed "as above")
    assert [r[0] for r in rows] == (["300"] * 4 + ["100", "100"] + ["300"] * 4 + ["100", "300"]
                                    + ["100"] * 3 + ["300"] * 6 + ["100"] * 3 + ["300"] * 6
                                    + ["100"] * 2 + ["300"] * 4 + ["100", "300", "300"]
                                    + ["100"] * 2 + ["300"] * 4 + ["100"] * 2 + ["300"] * 4 + ["100"] * 2
                                    + ["300"] * 2 + ["300"] * 2)
    assert all(0 < float(r[9].split()[0]) <= 100 and 0 < float(r[10].split()[0]) <= 100 for r in rows)
    # stage 2's passes (a twentieth of the row's at tiny) and the classifier's: the smoke preset's, then the lever's
    assert [r[1] for r in rows[:4]] == ["0.05 / 8", "0.05 / 10", "0.05 / 8", "0.05 / 10"]
    assert [r[1] for r in rows[51:55]] == ["0.1 / 8", "0.5 / 8"] * 2  # the long-stage-2 lever: 2 and 10 passes
    words = [int(r[3].replace(",", "")) for r in rows]
    assert words[4] < words[5] and words[6] < words[7] and words[8] < words[9]  # the giant's vocabulary, then grown
    assert words[0] == words[4] and words[10] == words[5]  # the preset keeps the giant's; the stage-2 lever grows it
    assert [r[4] for r in rows[12:21]] == ["0.001", "0.003", "0.01"] * 3  # the rates lever, both encoders at each
    assert {r[4] for r in rows[:12] + rows[21:]} == {"0.003"}  # every other lever at the page's rate
    assert [r[5] for r in rows[21:30]] == ["0.5", "1", "2"] * 3  # the dropout lever
    assert {r[5] for r in rows[:21] + rows[30:]} == {"1"}  # every other lever at the page's dropouts
    assert [r[6] for r in rows[30:36]] == ["word", "<eos>"] * 3  # the boundary lever: the page's texts, then marked
    assert {r[6] for r in rows[:30]} == {"word"}
    assert {r[6] for r in rows[36:39]} == {"<eos>"} and words[36] == words[5]  # authors-text: marked, grown
    assert {r[7] for r in rows[:39] + rows[45:]} == {"200"}  # the smoke giant's steps, but in the pretraining lever:
    assert [r[7] for r in rows[39:45]] == ["200", "400"] * 3  # the page's giant, then one of twice its steps
    assert [r[10] for r in rows[39:41]] == [rows[39][10]] * 2, "from scratch must not depend on the giant"
    assert rows[39][9] != rows[40][9] or rows[39][11] != rows[40][11], "the longer giant must change ULMFiT's run"
    assert {r[8] for r in rows[:45]} == {"page"}  # every lever reads the page's labelled sample, but the samples lever
    assert [r[8] for r in rows[45:51]] == ["page", "per seed"] * 3
    assert rows[46][9:11] != rows[45][9:11], "a sample of the seed's own must change the runs"
    assert {r[8] for r in rows[51:]} == {"per seed"}  # and the last two levers; the long stage 2 reads 5x the passes:
    assert rows[52][9] != rows[51][9] and rows[52][10] == rows[51][10], "stage 2 must change ULMFiT's run only"
    assert words[55] == words[5] and words[56] == words[0] and [r[6] for r in rows[55:]] == ["word", "<eos>"]


def test_attention_smallest():
    out = run("benchmarks/attention.py", "--part", "all", "--batch", "2", "--seq", "8", "--d-model", "32",
              "--heads", "2", "--d-ff", "64", "--repeats", "1", "--lengths", "64", "--long-d-model", "32",
              "--long-heads", "2", "--block", "32", "--long-repeats", "1")
    assert "ratio" in out.lower() or "ms" in out


def test_bert_smallest():
    pytest.importorskip("transformers")
    out = run("benchmarks/bert.py", "--size", "tiny", "--batch", "2", "--seq", "16", "--vocab", "100",
              "--repeats", "1", "--warmup", "0")
    assert "ratio ours/transformers" in out


def test_linear_cross_entropy_tiny():
    out = run("benchmarks/linear_cross_entropy.py", "--tiny", "--threads", "1")
    rows = [line for line in out.splitlines() if "/ fused" in line]
    assert len(rows) == 4 and all("losses" in r for r in rows)  # two models x two references
    for r in rows:  # the two losses agree
        ref, fused = (float(x) for x in r.split("losses ")[1].split(" vs "))
        assert abs(ref - fused) < 1e-4


def test_gpt_tiny():
    out = run("benchmarks/gpt.py", "--tiny")
    assert "ratio cached/uncached" in out and "same tokens: True" in out
    if importlib.util.find_spec("transformers") is not None:  # the training step against GPT2LMHeadModel
        assert "ratio ours/transformers" in out
    else:
        assert "training step: skipped" in out


NO_WIKITEXT = pytest.mark.skipif(mirror_folder("wikitext-2") is None, reason="no WikiText-2 in the offline mirror: "
                                 "set SHOULDERS_DATA_MIRROR to the book's shared/data folder")


@NO_WIKITEXT
def test_ngram_smallest():
    nltk = importlib.util.find_spec("nltk") is not None
    out = run("benchmarks/ngram.py", "--train-lines", "2000", "--repeats", "1", "--no-kenlm",
              *(["--nltk-tokens", "2000", "--nltk-ngrams", "20"] if nltk else ["--no-nltk"]))
    assert "perplexity: valid" in out


@NO_WIKITEXT
def test_word2vec_smallest():
    gensim = importlib.util.find_spec("gensim") is not None
    out = run("benchmarks/word2vec.py", "--tiny", *([] if gensim else ["--no-gensim"]))
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    for output in ("softmax", "hs", "ns"):  # --part update-cost: one row per output layer, a time per |V|
        assert any(line.startswith(f"| {output} | ") and line.count("|") == 4 for line in rows), f"no {output} row"
    for n in (1, 2):  # --part train: each side's speed row at N threads, with the ratio to gensim beside ours
        ours = [line for line in rows if line.startswith("| shoulders (") and f" | {n} | " in line]
        assert len(ours) == 1, f"no speed row for shoulders at {n} thread(s)"
        if gensim:
            assert any(line.startswith(f"| gensim | {n} | ") for line in rows)
            ratio = ours[0].rstrip(" |").split(" | ")[-2]
            assert float(ratio) > 0, ours[0]
    assert "load average at start:" in out and "load average at the end:" in out


@NO_WIKITEXT
@pytest.mark.skipif(mirror_folder("sst-trees") is None, reason="no SST trees in the offline mirror")
def test_doc2vec_tiny():
    gensim = importlib.util.find_spec("gensim") is not None
    out = run("benchmarks/doc2vec.py", "--tiny", *([] if gensim else ["--no-gensim"]))
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert any(line.startswith("| shoulders | ") for line in rows)
    if gensim:  # the quality ratio per task and the speed ratios, as numbers
        ratio = next(line for line in rows if line.startswith("| | "))
        assert all(float(x) > 0 for x in ratio.strip(" |").split(" | "))
    assert "load average at start:" in out and "load average at the end:" in out


@NO_WIKITEXT
def test_quick_thoughts_tiny():
    out = run("benchmarks/quick_thoughts.py", "--tiny", "--threads", "1")
    rows = {line.split(" | ")[0][2:]: line for line in out.splitlines() if line.startswith("| ") and "thoughts" in line}
    assert set(rows) == {"Skip-thoughts", "Quick-thoughts"}
    ratio = float(out.split("Skip-thoughts / Quick-thoughts: ")[1].split("x")[0])
    assert ratio > 0


@NO_WIKITEXT
def test_quick_thoughts_settings_tiny():
    out = run("benchmarks/quick_thoughts_settings.py", "--tiny", "--threads", "1")
    rows = [line for line in out.splitlines() if line.startswith("| Quick-thoughts")]
    assert len(rows) == 6  # three variants x two grids
    for line in rows:
        cells = line.strip(" |").split(" | ")[2:]
        assert len(cells) == 3 and all(0 < float(c.split(" (")[0]) <= 100 for c in cells)


def test_bert_all_labels_words_fixed_trains_all_but_the_word_embeddings():
    bal = load(ROOT / "benchmarks" / "bert_all_labels.py")
    torch.manual_seed(0)
    head = heads.SequenceClassifier(BertModel(BertConfig.named("tiny", vocab_size=20, max_len=16)), 2)
    before = {k: v.clone() for k, v in head.state_dict().items()}
    feats = [{"input_ids": [2, 5 + i % 7, 3], "token_type_ids": [0, 0, 0], "labels": i % 2} for i in range(16)]
    cfg = BertFinetuningConfig.preset("smoke", batch_size=8, max_steps=3, min_steps=3)
    bal.words_fixed(head, feats, 0, cfg, lr=1e-2, steps=3)
    after = head.state_dict()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert "encoder.embeddings.word.weight" not in changed
    assert {"encoder.embeddings.position.weight", "classifier.weight"} <= changed


@NO_WIKITEXT
def test_bert_all_labels_tiny():
    out = run("benchmarks/bert_all_labels.py", "--tiny", "--threads", "1", "--budgets", "100", timeout=400)
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| ")]
    names = ("from scratch", "pre-trained", "pre-trained + SST text", "pre-trained, new pooler")
    variants = [r for r in rows if len(r) == 7 and r[0] in names]
    assert len(variants) == 25 and all(0 < float(r[4]) <= 100 for r in variants)
    assert {r[0] for r in variants} == set(names)
    ways = [r[1] for r in variants]
    assert ways[:14] == ["as the page"] * 14
    assert ways[14:] == ["linear probe first"] * 2 + ["layer-wise rates"] + ["weight average"] * 2 + [
        "mean pooling"] * 5 + ["word embeddings frozen"]
    assert variants[23][0] == "pre-trained + SST text" and variants[24][0] == "pre-trained"
    steps = [int(r[3]) for r in variants]  # at tiny the 3,000-update rows are capped by three passes (19)
    assert steps[19] == steps[20] == steps[0] < steps[21] == steps[22] == steps[23] == steps[9]  # then 3,000
    assert steps[24] == steps[0]
    rates = [r for r in rows if r[0] == "100" and r[2] in names]
    assert len(rates) == 3 and all(len(r) == 6 for r in rates)
    assert any("gain at each one's best rate" in line for line in out.splitlines())
    # one chosen row, no rates table
    out = run("benchmarks/bert_all_labels.py", "--tiny", "--threads", "1", "--variants", "12", "--no-rates",
              timeout=400)
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| ")]
    assert [r[0] for r in rows if len(r) == 7 and r[0] in names] == ["pre-trained, new pooler"]
    assert "With few labels" not in out
    bad = subprocess.run([sys.executable, "benchmarks/bert_all_labels.py", "--tiny", "--variants", "99"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--variants takes rows 0 to 24" in bad.stderr


@NO_WIKITEXT
def test_bert_giant_levers_tiny():
    out = run("benchmarks/bert_giant_levers.py", "--tiny", "--threads", "1", "--levers", "7", "8", "9", "10",
              "--scratch", "--labels", "100")
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| ")]
    rows = [r for r in rows if len(r) == 5 and r[0] != "encoder" and not r[0].startswith("---")]
    # the preset's control, then each lever that changes the network with its own control: in its vocabulary (the
    # smoke preset's 2,000 pieces halved), with its layers (pre-LN), and its size (BERT-mini); without NSP the
    # network is the preset's
    assert [r[0] for r in rows] == ["from scratch", "from scratch, 1,000 pieces", "pre-trained: half the vocabulary",
                                    "from scratch, pre-LN", "pre-trained: pre-LN",
                                    "pre-trained: no next-sentence prediction",
                                    "from scratch, BERT-mini", "pre-trained: BERT-mini, a quarter of the steps"]
    assert all(rows[i][1].startswith("30, ") for i in (2, 4, 5))  # a tenth of the smoke preset's steps
    assert rows[7][1].startswith("7, ")  # ... and a tenth of a quarter of them for the larger network
    assert " / -, " in rows[5][1] and " / -, " not in rows[4][1]  # no NSP accuracy where NSP was not trained
    assert all(0 < float(r[2]) <= 100 for r in rows)
    bad = subprocess.run([sys.executable, "benchmarks/bert_giant_levers.py", "--tiny", "--levers", "99"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--levers takes rows 0 to" in bad.stderr


@NO_WIKITEXT
def test_three_ways_rates_tiny():
    out = run("benchmarks/three_ways_rates.py", "--tiny", "--threads", "1", "--networks", "awd_lstm", "bert",
              "--tasks", "SST-2", "--shared-lr", "1e-3", "--pooling", "paper", "mean",
              timeout=400)  # may train the smoke AWD-LSTM and BERT giants
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| awd_lstm")]
    assert "concat pooling pools every state already" in rows.pop()[3]  # no mean-pooled AWD-LSTM
    assert [(r[1], r[2], r[3], r[6]) for r in rows] == [
        (rates, "paper", lr, way) for rates, lr in (("chapters", "0.003"), ("shared", "0.001"))
        for way in ("top", "full", "scratch")]
    bert = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| bert | chapters")]
    assert [(r[2], r[6]) for r in bert] == [(p, way) for p in ("paper", "mean") for way in ("top", "full", "scratch")]
    rows += bert
    assert all(r[4] == "SST-2" and r[5] == "120" and 0 < float(r[7]) <= 100 and r[9] in ("yes", "no") for r in rows)
    assert [r[7] for r in bert[:3]] != [r[7] for r in bert[3:]], "the mean must change what the classifier reads"
    bad = subprocess.run([sys.executable, "benchmarks/three_ways_rates.py", "--tiny", "--networks", "elmo"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--networks takes some of" in bad.stderr


@NO_WIKITEXT
@pytest.mark.skipif(mirror_folder("sst-trees") is None, reason="no SST trees in the offline mirror")
def test_ulmfit_bf16_tiny():
    out = run("benchmarks/ulmfit_bf16.py", "--tiny", "--threads", "1")
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| 0 | ")]
    assert [r[1] for r in rows] == ["float32", "bf16"]  # one seed, the two arithmetics alternated
    assert all(float(r[2]) > 0 and 0 <= float(r[3]) <= 100 and float(r[4]) > 0 for r in rows)
    assert "float32 / bf16 = " in out and "native bf16: " in out


@NO_WIKITEXT
@pytest.mark.skipif(mirror_folder("sst-trees") is None, reason="no SST trees in the offline mirror")
def test_parallel_runs_tiny():
    out = run("benchmarks/parallel_runs.py", "--tiny", "--threads", "2")
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| 0 | ")]
    assert [r[1] for r in rows] == ["1", "2"]  # one pair: in order, then two forked workers
    assert rows[0][3] == rows[1][3], "both ways must give the same dev accuracies"
    assert "in order / side by side = " in out and "dev accuracy 0.00 points" in out


@NO_WIKITEXT
@pytest.mark.skipif(mirror_folder("sst-trees") is None, reason="no SST trees in the offline mirror")
def test_parallel_runs_stage_2_tiny():
    out = run("benchmarks/parallel_runs.py", "--tiny", "--stage", "2", "--threads", "2")
    rows = [line.strip(" |").split(" | ") for line in out.splitlines() if line.startswith("| 0 | ")]
    assert [r[1] for r in rows] == ["1", "2"]  # one pair: in order, then two forked workers
    ppl = [[float(p.rsplit(" ", 1)[1]) for p in r[3].split("; ")] for r in rows]
    assert len(ppl[0]) == 2 and ppl[0][0] != ppl[0][1], "the two ablations must train differently"
    assert max(abs(a - b) for a, b in zip(*ppl)) < 0.05, f"in order and side by side must agree: {ppl}"
    assert "in order / side by side = " in out
