"""shoulders.evaluate.ledger: the schema round trip, validation, concurrent appends, torn lines, latest, env var."""
from __future__ import annotations

import datetime
import json
import multiprocessing
import time
import warnings

import pytest
import torch

from shoulders.evaluate import ledger

COMMON = dict(model="NNLM", task="wikitext-2", split="test", chapter="02_nnlm", scale="smoke", machine="test box")


def test_schema_round_trip(tmp_path):
    path = tmp_path / "ledger.jsonl"
    entry = ledger.record("perplexity", torch.tensor(141.25), model="NNLM", task="wikitext-2", split="test",
                          chapter="02_nnlm", seeds=(0, 1, 2), values=[140.0, 141.75, 142.0], spread=0.9,
                          wall_time_s=812.5, scale="cpu", higher_is_better=False, notes="Bengio et al. 2003, Table 1",
                          path=path, order=5)
    assert tuple(entry) == ledger.FIELDS
    assert entry["schema"] == ledger.SCHEMA == "shoulders.ledger/1"
    assert entry["value"] == 141.25 and isinstance(entry["value"], float)
    assert entry["seeds"] == [0, 1, 2] and entry["values"] == [140.0, 141.75, 142.0]
    assert entry["extra"] == {"order": 5} and entry["higher_is_better"] is False
    stamp = datetime.datetime.fromisoformat(entry["time"])
    assert stamp.utcoffset() == datetime.timedelta(0)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - stamp).total_seconds()) < 60
    machine = entry["machine"]  # the automatic description
    assert machine["threads"] == torch.get_num_threads() and machine["torch"] == torch.__version__
    assert machine["cpu"] and machine["description"] == ledger.machine()
    assert f"{torch.get_num_threads()} threads" in ledger.machine()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == entry  # one JSON object per line
    assert ledger.read(path) == [entry]
    assert ledger.read(path, metric="perplexity", scale="cpu", seeds=(0, 1, 2), order=5) == [entry]
    assert ledger.read(path, scale="smoke") == [] and ledger.read(path, order=4) == []
    md = ledger.table(ledger.read(path)).splitlines()
    assert md[0] == "| metric | value | model | task | split | scale | seeds | wall time | machine |"
    assert md[2].startswith("| perplexity | 141.2 ± 0.9 | NNLM | wikitext-2 | test | cpu | 0, 1, 2 | 13.5 min | ")
    assert ledger.read(tmp_path / "none.jsonl") == []  # no ledger yet


def test_scale_defaults_to_the_current_one(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOULDERS_SCALE", "smoke")
    entry = ledger.record("accuracy", 0.5, **{**COMMON, "scale": None}, path=tmp_path / "l.jsonl")
    assert entry["scale"] == "smoke" and entry["machine"] == {"description": "test box"}


@pytest.mark.parametrize("change, field", [
    (dict(metric=""), "metric"), (dict(metric=3), "metric"), (dict(model=None), "model"), (dict(task=" "), "task"),
    (dict(split=""), "split"), (dict(chapter=""), "chapter"), (dict(value=float("nan")), "value"),
    (dict(value=float("inf")), "value"), (dict(value="3.1"), "value"), (dict(value=True), "value"),
    (dict(seeds=[]), "seeds"), (dict(seeds=[0.5]), "seeds"), (dict(seeds="0"), "seeds"), (dict(seeds=[True]), "seeds"),
    (dict(values=[1.0, 2.0]), "values"), (dict(scale="big"), "scale"), (dict(wall_time_s=-1.0), "wall_time_s"),
    (dict(spread=float("nan")), "spread"), (dict(higher_is_better="yes"), "higher_is_better"),
    (dict(machine=""), "machine"), (dict(notes=7), "notes"), (dict(time="now"), "extra"),
    (dict(odd=object()), "extra"),
])
def test_validation_names_the_field_and_writes_nothing(tmp_path, change, field):
    path = tmp_path / "ledger.jsonl"
    kwargs = {"metric": "perplexity", "value": 1.0, **COMMON, **change}
    with pytest.raises(ValueError, match=f"'{field}'"):
        ledger.record(kwargs.pop("metric"), kwargs.pop("value"), path=path, **kwargs)
    assert not path.exists()


def test_one_seed_as_an_int(tmp_path):
    assert ledger.record("accuracy", 1, **COMMON, seeds=3, path=tmp_path / "l.jsonl")["seeds"] == [3]


def _writer(path: str, who: int, n: int) -> None:
    for i in range(n):
        ledger.record("accuracy", float(i), **{**COMMON, "model": f"writer {who}"}, seeds=[who], path=path)


def test_concurrent_appends_from_two_processes(tmp_path):
    path = tmp_path / "ledger.jsonl"
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)
    procs = [ctx.Process(target=_writer, args=(str(path), who, 200)) for who in (1, 2)]
    for p in procs:
        p.start()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ledger.LedgerWarning)  # a reader never sees half a line
        while any(p.is_alive() for p in procs):
            ledger.read(path)
            time.sleep(0.01)
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ledger.LedgerWarning)
        entries = ledger.read(path)
    assert len(entries) == 400 and len(path.read_text(encoding="utf-8").splitlines()) == 400
    for who in (1, 2):  # each writer's lines, complete and in its own order
        assert [e["value"] for e in entries if e["model"] == f"writer {who}"] == [float(i) for i in range(200)]


def test_torn_last_line_is_skipped_with_a_warning(tmp_path):
    path = tmp_path / "ledger.jsonl"
    for v in (1.0, 2.0):
        ledger.record("accuracy", v, **COMMON, path=path)
    with open(path, "a", encoding="utf-8") as f:  # a writer killed half-way through its line
        f.write('{"schema": "shoulders.ledger/1", "metric": "accu')
    with pytest.warns(ledger.LedgerWarning, match="line 3"):
        assert [e["value"] for e in ledger.read(path)] == [1.0, 2.0]
    ledger.record("accuracy", 3.0, **COMMON, path=path)  # the next writer starts on a fresh line
    with pytest.warns(ledger.LedgerWarning, match="line 3") as caught:
        assert [e["value"] for e in ledger.read(path)] == [1.0, 2.0, 3.0]
    assert len(caught) == 1


def test_a_line_of_another_schema_is_skipped(tmp_path):
    path = tmp_path / "ledger.jsonl"
    good = ledger.record("accuracy", 0.5, **COMMON, path=path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({**good, "schema": "shoulders.ledger/99"}) + "\n")
        f.write("[1, 2]\n")
    with pytest.warns(ledger.LedgerWarning) as caught:
        assert ledger.read(path) == [good]
    assert ["line 2" in str(w.message) for w in caught] == [True, False]
    assert "line 3" in str(caught[1].message)


def test_latest_picks_the_newest(tmp_path, monkeypatch):
    path = tmp_path / "ledger.jsonl"
    first = ledger.record("perplexity", 150.0, **COMMON, path=path)
    second = ledger.record("perplexity", 140.0, **COMMON, path=path)
    ledger.record("perplexity", 99.0, **{**COMMON, "split": "valid"}, path=path)
    ledger.record("perplexity", 98.0, **{**COMMON, "scale": "cpu"}, path=path)
    ask = dict(model="NNLM", task="wikitext-2", split="test", path=path)
    assert ledger.latest("perplexity", **ask, scale="smoke") == second
    monkeypatch.setenv("SHOULDERS_SCALE", "cpu")  # the default scale is the current one
    assert ledger.latest("perplexity", **ask)["value"] == 98.0
    # newest by time, not by line: an entry appended later but stamped earlier does not win
    earlier = {**first, "value": 1.0, "time": "2000-01-01T00:00:00+00:00"}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(earlier) + "\n")
    assert ledger.latest("perplexity", **ask, scale="smoke") == second
    with pytest.raises(LookupError, match=r"model='LBL'.*it has: .*perplexity of 'NNLM' on test at smoke"):
        ledger.latest("perplexity", **{**ask, "model": "LBL"}, scale="smoke")
    with pytest.raises(LookupError, match="nothing for task 'ptb'"):
        ledger.latest("perplexity", **{**ask, "task": "ptb"}, scale="smoke")


def test_env_var_and_cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOULDERS_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv(ledger.ENV_VAR, raising=False)
    assert ledger.ledger_path() == tmp_path / "cache" / "ledger.jsonl"
    target = tmp_path / "elsewhere" / "results.jsonl"
    monkeypatch.setenv(ledger.ENV_VAR, str(target))
    entry = ledger.record("bleu", 35.2, **COMMON)
    assert ledger.ledger_path() == target and ledger.read() == [entry]
    assert not (tmp_path / "cache").exists()
    monkeypatch.setenv(ledger.ENV_VAR, str(tmp_path))  # a folder: the ledger.jsonl inside it
    assert ledger.ledger_path() == tmp_path / "ledger.jsonl"

