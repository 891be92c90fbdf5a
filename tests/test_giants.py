"""Giants: trained once and cached; a second call loads; export -> import is bit-exact; a damaged file is caught;
two processes racing for the same giant train it once; a published export downloads through the data registry."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch

import shoulders as sh
from shoulders.giants import GiantError
from shoulders.recipes.bert import BertPretrainingConfig
from shoulders.recipes.xlnet import XLNetPretrainingConfig

sys.path.insert(0, str(Path(__file__).parent))
import tiny_giant  # noqa: E402  (registers the "tiny-test" giant)

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def giants_root(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "giants"))
    monkeypatch.setenv("TINY_GIANT_LOG", str(tmp_path / "trainings.log"))
    return tmp_path / "giants"


def trainings(tmp_path: Path) -> int:
    log = tmp_path / "trainings.log"
    return len(log.read_text().split()) if log.exists() else 0


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_first_load_trains_and_caches_the_second_loads(tmp_path, giants_root):
    cfg = tiny_giant.TinyConfig.preset("smoke")
    assert sh.giants.cached("tiny-test", cfg) is None
    first = sh.giants.load("tiny-test", cfg, progress=False)
    assert first.trained and trainings(tmp_path) == 1
    assert first.folder.parent == giants_root and sh.giants.cached("tiny-test", cfg) == first.folder
    second = sh.giants.load("tiny-test", cfg, progress=False)
    assert not second.trained and trainings(tmp_path) == 1
    for k, v in weights(first.model).items():
        assert torch.equal(v, second.model.state_dict()[k])
    assert second.tokenizer.tokens == first.tokenizer.tokens
    assert second.history.last("loss") == first.history.last("loss") == second.metrics["final_loss"]
    card = second.card
    assert card["name"] == "tiny-test" and card["scale"] == "smoke" and card["steps"] == 5
    assert set(card["files"]) == {"model.safetensors", "config.json", "history.json", "vocab.txt", "README.md"}
    assert card["data"][0]["name"] == "wikitext-2" and card["machine"]
    assert "# A tiny test giant" in (first.folder / "README.md").read_text()
    assert all(f.stat().st_mode & 0o044 == 0o044 for f in first.folder.iterdir())  # shareable, like the data
    # another config is another giant
    other = sh.giants.load("tiny-test", cfg.replace(steps=6), progress=False)
    assert other.trained and other.folder != first.folder and trainings(tmp_path) == 2


def test_snapshots_are_the_weights_part_way_and_are_checked(tmp_path):
    cfg = tiny_giant.TinyConfig.preset("smoke", snapshots=(2, 4))
    g = sh.giants.load("tiny-test", cfg, progress=False)
    assert g.snapshot_steps == [2, 4] and g.card["snapshots"] == [2, 4]
    assert {"snapshot-00000002.safetensors", "snapshot-00000004.safetensors"} <= set(g.card["files"])
    assert "snapshots kept after 2, 4" in (g.folder / "README.md").read_text()
    # the snapshot after 2 steps is the giant trained for 2 steps (same seed, same batches, deterministic SGD)
    short = sh.giants.load("tiny-test", cfg.replace(steps=2, snapshots=()), progress=False)
    for k, v in short.model.state_dict().items():
        assert torch.equal(g.snapshot(2).state_dict()[k], v)
    assert not torch.equal(g.snapshot(4).linear.weight, g.snapshot(2).linear.weight)
    with pytest.raises(GiantError, match=r"no snapshot at step 3; it has \[2, 4\]"):
        g.snapshot(3)
    (g.folder / "snapshot-00000004.safetensors").write_bytes(b"not weights")
    with pytest.raises(GiantError, match="snapshot-00000004.safetensors does not match its model card"):
        sh.giants.verify(g.folder)
    with pytest.raises(GiantError, match="cannot load .*snapshot-00000004"):
        g.snapshot(4)


def test_snapshots_survive_a_resumed_run(tmp_path):
    x = torch.randn(8, 3, generator=torch.Generator().manual_seed(0))
    batches = [(x, x.sum(1))]

    def run(steps, snaps):
        torch.manual_seed(0)
        model = tiny_giant.TinyModel(3)
        sh.train.fit(model, batches, torch.optim.SGD(model.parameters(), lr=0.1), steps=steps, progress=False,
                     checkpoint=tmp_path / "run", callbacks=[snaps], seed=0)
        return model

    first = sh.train.Snapshots([2, 5])
    run(3, first)                                   # stopped after 3 steps: snapshot 2 taken, 5 not yet
    assert sorted(first.states) == [2]
    resumed = sh.train.Snapshots([2, 5])
    run(6, resumed)                                 # resumes from step 3; snapshot 2 comes from the checkpoint
    assert sorted(resumed.states) == [2, 5]
    assert all(torch.equal(resumed.states[2][k], v) for k, v in first.states[2].items())


def test_export_import_round_trip_is_bit_exact(tmp_path, monkeypatch):
    cfg = tiny_giant.TinyConfig.preset("smoke")
    original = sh.giants.load("tiny-test", cfg, progress=False)
    out = sh.giants.export("tiny-test", tmp_path / "export", cfg)
    assert sorted(p.name for p in out.iterdir()) == sorted([*original.card["files"], "card.json"])
    with pytest.raises(FileExistsError):
        sh.giants.export("tiny-test", out, cfg)
    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "elsewhere"))  # a colleague's machine
    assert sh.giants.cached("tiny-test", cfg) is None
    folder = sh.giants.import_folder(out)
    assert folder.parent == tmp_path / "elsewhere"
    again = sh.giants.load("tiny-test", cfg, progress=False)
    assert not again.trained and trainings(tmp_path) == 1
    assert sha(again.folder / "model.safetensors") == sha(original.folder / "model.safetensors")
    for k, v in original.model.state_dict().items():
        assert torch.equal(v, again.model.state_dict()[k])
    assert sh.giants.import_folder(out) == folder  # importing the same giant twice is harmless


def test_a_damaged_export_is_refused_and_nothing_is_imported(tmp_path, monkeypatch):
    cfg = tiny_giant.TinyConfig.preset("smoke")
    sh.giants.load("tiny-test", cfg, progress=False)
    out = sh.giants.export("tiny-test", tmp_path / "export", cfg)
    blob = bytearray((out / "model.safetensors").read_bytes())
    blob[-3] ^= 0xFF  # same size, one flipped byte in the weights
    (out / "model.safetensors").write_bytes(bytes(blob))
    monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "elsewhere"))
    with pytest.raises(GiantError, match="model.safetensors"):
        sh.giants.import_folder(out)
    assert sh.giants.cached("tiny-test", cfg) is None
    (out / "stray.txt").write_text("not on the card")
    with pytest.raises(GiantError, match="stray.txt"):
        sh.giants.verify(out)


def test_two_processes_train_a_giant_once(tmp_path):
    outs = [tmp_path / f"out{i}.txt" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, str(HERE / "tiny_giant.py"), str(o)]) for o in outs]
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    results = [o.read_text().split() for o in outs]
    assert trainings(tmp_path) == 1, "both processes trained the giant"
    assert results[0][0] == results[1][0], "the two processes got different weights"
    assert sorted(r[1] for r in results) == ["False", "True"]  # one trained, the other waited and loaded


def test_unknown_giant_and_wrong_config_say_what_exists():
    with pytest.raises(KeyError, match="tiny-test"):
        sh.giants.load("tiny-tset")
    with pytest.raises(TypeError, match="TinyConfig"):
        sh.giants.load("tiny-test", sh.recipes.bert.BertPretrainingConfig.preset("smoke"))


def test_a_published_export_downloads_through_the_data_registry(tmp_path, monkeypatch):
    cfg = tiny_giant.TinyConfig.preset("smoke")
    original = sh.giants.load("tiny-test", cfg, progress=False)
    out = sh.giants.export("tiny-test", tmp_path / "published", cfg)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(out)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        entry = sh.giants.published_entry(out, f"http://127.0.0.1:{httpd.server_address[1]}")
        giant = sh.giants.register(tiny_giant.TINY.__class__(**{**tiny_giant.TINY.__dict__,
                                                                "published": {"smoke": entry}}), replace=True)
        monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "fresh"))
        monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "data-cache"))
        monkeypatch.delenv("SHOULDERS_DATA_MIRROR", raising=False)
        got = sh.giants.load(giant, cfg, download=True, progress=False)
    finally:
        httpd.shutdown()
        httpd.server_close()
        sh.giants.register(tiny_giant.TINY, replace=True)
    assert not got.trained and trainings(tmp_path) == 1
    assert sha(got.folder / "model.safetensors") == sha(original.folder / "model.safetensors")
    assert json.loads((got.folder / "card.json").read_text())["files"] == original.card["files"]
    # an offline mirror folder works the same way: <mirror>/<entry name>/ holding the export, nothing served
    mirror = tmp_path / "mirror"
    shutil.copytree(out, mirror / entry.name)
    giant = sh.giants.register(tiny_giant.TINY.__class__(**{**tiny_giant.TINY.__dict__,
                                                            "published": {"smoke": entry}}), replace=True)
    try:
        monkeypatch.setenv("SHOULDERS_GIANTS", str(tmp_path / "fresh-2"))
        monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "data-cache-2"))
        monkeypatch.setenv("SHOULDERS_DATA_MIRROR", str(mirror))
        offline = sh.giants.load(giant, cfg, download=True, progress=False)
    finally:
        sh.giants.register(tiny_giant.TINY, replace=True)
    assert not offline.trained and trainings(tmp_path) == 1
    assert sha(offline.folder / "model.safetensors") == sha(original.folder / "model.safetensors")


def test_the_command_line_lists_exports_and_imports(tmp_path):
    run = partial(subprocess.run, capture_output=True, text=True, timeout=120, cwd=HERE)
    listed = run([sys.executable, "-m", "shoulders.giants", "list"])
    assert listed.returncode == 0 and "bert" in listed.stdout, listed.stderr
    bad = run([sys.executable, "-m", "shoulders.giants", "import", str(tmp_path)])
    assert bad.returncode != 0 and "card.json" in bad.stderr


def _continue(cfg, *, base, device=None, progress=True, **hints):
    """A giant that continues from ``base``: its weights plus five more steps of the tiny recipe's data."""
    model = tiny_giant.build(cfg, None)
    model.load_state_dict(base.model.state_dict())
    x = torch.randn(16, cfg.width, generator=torch.Generator().manual_seed(1))
    hist = sh.train.fit(model, [(x, x.sum(1))], torch.optim.SGD(model.parameters(), lr=0.1), steps=3,
                        progress=False, device="cpu")
    return sh.recipes.Artefact(model=model, history=hist, tokenizer=base.tokenizer,
                               metrics={"start_loss": hist.series("loss")[1][0]})


def test_a_giant_built_on_another_loads_its_base_first_and_keys_on_it(tmp_path, monkeypatch):
    derived = sh.giants.register(sh.giants.Giant(
        name="tiny-test-further", title="The tiny giant, trained further", chapter="tests",
        config=tiny_giant.TinyConfig, train=_continue, build=tiny_giant.build, tokenizer=sh.text.WordPiece,
        base="tiny-test"), replace=True)
    try:
        loaded = sh.giants.load(derived, progress=False)
        assert trainings(tmp_path) == 1, "the base trains (once), then the derived giant continues from it"
        base = sh.giants.load("tiny-test", progress=False)
        assert not base.trained and loaded.card["base"] == base.folder.name
        assert loaded.card["metrics"]["start_loss"] < base.history.series("loss")[1][0], "it starts where base ended"
        assert sh.giants.key(derived) != sh.giants.key(dataclasses.replace(derived, base=None))
        out = sh.giants.export(derived, tmp_path / "export", progress=False)
        assert json.loads((out / "config.json").read_text())["base"] == base.folder.name
        assert "continues from the giant" in (out / "README.md").read_text()
        # the book's base changes (another config of tiny-test): the export no longer belongs to this book
        other = sh.giants.register(tiny_giant.TINY.__class__(**{**tiny_giant.TINY.__dict__, "name": "tiny-test-b"}),
                                   replace=True)
        sh.giants.register(dataclasses.replace(derived, base=other.name), replace=True)
        with pytest.raises(GiantError, match="continued from"):
            sh.giants.import_folder(out)
    finally:
        sh.giants.register(derived, replace=True)


@dataclasses.dataclass
class _Later(tiny_giant.TinyConfig):
    """TinyConfig as a later version of the book writes it: one field added with ``late_field``."""
    gain: float = sh.config.late_field(1.0)


@dataclasses.dataclass
class _Plain(tiny_giant.TinyConfig):
    """The same field added plainly."""
    gain: float = 1.0


def test_a_late_field_keys_a_giant_only_when_it_is_set():
    before = sh.giants.key("tiny-test", tiny_giant.TinyConfig(width=3), "cpu")
    assert sh.giants.key("tiny-test", _Later(width=3), "cpu") == before, "added at its default: the same key"
    assert sh.giants.key("tiny-test", _Later(width=3, gain=2.0), "cpu") != before, "set: another giant"
    assert sh.giants.key("tiny-test", _Plain(width=3), "cpu") != before, "a plain new field changes every key"
    # the same rule inside nested containers, and everything else exactly as dataclasses.asdict gives it
    outer = {"inner": _Later(width=2), "many": [_Later(gain=3.0)]}
    assert sh.config.key_fields(outer) == {"inner": {k: v for k, v in dataclasses.asdict(_Later(width=2)).items()
                                                     if k != "gain"},
                                           "many": [dataclasses.asdict(_Later(gain=3.0))]}


def test_bert_pre_ln_is_a_late_field_of_its_own_giant():
    cpu = BertPretrainingConfig.preset("cpu")
    assert sh.giants.key("bert", cpu) == sh.giants.key("bert", scale="cpu")
    assert "norm_first" not in sh.config.key_fields(cpu), "the paper's post-LN keeps the giants trained before it"
    assert sh.giants.key("bert", cpu.replace(norm_first=True)) != sh.giants.key("bert", cpu)
    assert cpu.replace(norm_first=True).model_config(100).block().norm_first
    with pytest.raises(sh.config.ConfigError, match="norm_first=True is a BERT lever"):
        XLNetPretrainingConfig.preset("smoke", norm_first=True)


def test_bert_without_nsp_is_a_late_field_of_its_own_giant():
    cpu = BertPretrainingConfig.preset("cpu")
    assert "nsp" not in sh.config.key_fields(cpu), "NSP on (the paper's) keeps the giants trained before the field"
    assert sh.giants.key("bert", cpu.replace(nsp=False)) != sh.giants.key("bert", cpu)
    with pytest.raises(sh.config.ConfigError, match="nsp=False is a BERT lever"):
        XLNetPretrainingConfig.preset("smoke", nsp=False)
