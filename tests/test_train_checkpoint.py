"""Checkpoints: layout, weights_only state, atomic writes, corrupt files and foreign models -> CheckpointError."""
import math

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

import shoulders as sh
from shoulders.train import (Callback, CheckpointError, TrainingDiverged, fit, latest_checkpoint, load_checkpoint,
                             load_weights, save_checkpoint)
from shoulders.train.checkpoint import write_sums


class Small(nn.Module):
    def __init__(self, hidden=6):
        super().__init__()
        self.fc = nn.Linear(3, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.out(torch.relu(self.fc(x))).pow(2).mean()


def batches():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(4, 3, generator=g) for _ in range(3)]


def train(model, root, steps=4, **kw):
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    return fit(model, batches(), opt, steps=steps, checkpoint=root, progress=False, device="cpu", **kw), opt


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_layout_weights_only_and_one_folder_kept(tmp_path):
    sh.seed(0)
    model = Small()
    train(model, tmp_path, steps=5, checkpoint_every=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-00000005"]  # older steps removed, no temp left
    folder = latest_checkpoint(tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["SHA256SUMS", "model.safetensors", "state.pt"]
    weights = load_file(folder / "model.safetensors")
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())
    state = torch.load(folder / "state.pt", weights_only=True)
    assert state["step"] == 5 and state["data"] == {"seed": state["data"]["seed"], "epoch": 1, "index": 2}
    assert set(state) >= {"optimizer", "scheduler", "rng", "history", "callbacks", "world_size"}
    assert set(state["rng"]) >= {"python", "numpy", "torch"}


def test_truncated_weights_raise_and_nothing_is_lost(tmp_path):
    sh.seed(0)
    train(Small(), tmp_path)
    file = latest_checkpoint(tmp_path) / "model.safetensors"
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError) as info:
        train(Small(), tmp_path, steps=8)
    msg = str(info.value)
    assert str(file) in msg and "truncated, corrupt" in msg and "move the folder" in msg
    assert snapshot(tmp_path) == before


def test_garbage_state_raises_and_nothing_is_lost(tmp_path):
    sh.seed(0)
    train(Small(), tmp_path)
    file = latest_checkpoint(tmp_path) / "state.pt"
    file.write_bytes(b"definitely not a checkpoint" * 10)
    write_sums(file.parent)  # checksums that agree: the reader's own checks must still refuse it
    before = snapshot(tmp_path)
    with pytest.raises(CheckpointError, match="state.pt cannot be read") as info:
        train(Small(), tmp_path, steps=8)
    assert "Nothing was changed or deleted" in str(info.value)
    assert snapshot(tmp_path) == before


def test_state_with_code_is_refused(tmp_path):
    sh.seed(0)
    train(Small(), tmp_path)
    folder = latest_checkpoint(tmp_path)
    state = torch.load(folder / "state.pt", weights_only=True)
    state["evil"] = Small  # a class: only a full unpickler would load it
    torch.save(state, folder / "state.pt")
    write_sums(folder)  # a forger who rewrites the checksums too
    with pytest.raises(CheckpointError, match="only tensors and plain containers"):
        load_checkpoint(folder, Small())


def test_a_checkpoint_of_another_model_lists_the_names(tmp_path):
    sh.seed(0)
    train(Small(), tmp_path)

    class Other(Small):
        def __init__(self):
            super().__init__(hidden=5)
            self.extra = nn.Linear(2, 2)
            del self.out
            self.out2 = nn.Linear(5, 1)

    other = Other()
    before = {k: v.clone() for k, v in other.state_dict().items()}
    with pytest.raises(CheckpointError) as info:
        load_weights(tmp_path, other)
    msg = str(info.value)
    assert "missing from the checkpoint: extra.weight, extra.bias, out2.weight, out2.bias" in msg
    assert "in the checkpoint but not in the model: out.bias, out.weight" in msg
    assert "fc.weight: checkpoint (6, 3) vs model (5, 3)" in msg and "fc.bias: checkpoint (6,) vs model (5,)" in msg
    assert all(torch.equal(v, before[k]) for k, v in other.state_dict().items())  # untouched
    with pytest.raises(CheckpointError, match="different model"):
        train(Small(hidden=5), tmp_path, steps=8)


def test_an_optimiser_of_another_shape_is_refused(tmp_path):
    sh.seed(0)
    model = Small()
    train(model, tmp_path)
    opt = torch.optim.Adam([{"params": model.fc.parameters()}, {"params": model.out.parameters()}], lr=0.1)
    with pytest.raises(CheckpointError, match="param group"):
        load_checkpoint(tmp_path, Small(), opt)


def test_interrupted_write_keeps_the_previous_checkpoint(tmp_path):
    sh.seed(0)
    model = Small()
    train(model, tmp_path, steps=2)
    good = snapshot(tmp_path)

    class Arm(Callback):  # after the resumed step 3, the next state_dict() call is the checkpoint write
        armed = False

        def on_step_end(self, run, logs):
            Arm.armed = True

    def interrupt(*args):  # an interruption while the checkpoint of step 3 is being written
        if Arm.armed:
            raise KeyboardInterrupt

    handle = model.register_state_dict_pre_hook(interrupt)
    with pytest.raises(KeyboardInterrupt):
        train(model, tmp_path, steps=4, checkpoint_every=1, callbacks=[Arm()])
    handle.remove()
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["step-00000002"]
    assert any(p.name.startswith(".tmp-step-00000003") for p in tmp_path.iterdir())  # the half-written save
    assert {k: v for k, v in snapshot(tmp_path / "step-00000002").items()} == good
    resumed = Small()
    hist, _ = train(resumed, tmp_path, steps=4, checkpoint_every=1)
    assert hist.series("loss")[0].tolist() == [1, 2, 3, 4]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-00000004"]  # leftovers cleaned by the next save


def test_tied_weights_round_trip(tmp_path):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(7, 4)
            self.dec = nn.Linear(4, 7, bias=False)
            self.dec.weight = self.emb.weight

        def forward(self, x):
            return self.dec(self.emb(x)).logsumexp(-1).mean()

    sh.seed(0)
    model = Tied()
    folder = save_checkpoint(tmp_path, 1, model, {"note": "x"})
    assert set(load_file(folder / "model.safetensors")) == {"emb.weight"}
    fresh = Tied()
    assert load_checkpoint(tmp_path, fresh)["note"] == "x"
    assert torch.equal(fresh.emb.weight, model.emb.weight) and fresh.dec.weight is fresh.emb.weight


def test_a_flipped_byte_is_caught_by_the_checksums_and_nothing_is_loaded(tmp_path):
    """A same-size change to a weight (a failing disk, a bad copy) used to resume silently."""
    sh.seed(0)
    train(Small(), tmp_path)
    file = latest_checkpoint(tmp_path) / "model.safetensors"
    blob = bytearray(file.read_bytes())
    blob[-2] ^= 0x10  # inside the last tensor's data: still a valid safetensors file
    file.write_bytes(bytes(blob))
    model = Small()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError, match="does not match its checksum"):
        load_checkpoint(file.parent, model)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    load_weights(file, Small())  # the file itself still reads: only the checksum saw the change


def test_a_bad_checkpoint_folder_fails_before_the_first_step(tmp_path):
    """A file where the folder should be used to fail after the whole run, with the History lost."""
    blocker = tmp_path / "runs"
    blocker.write_text("a file, not a folder")
    calls = []

    class Count(Callback):
        def on_step_end(self, run, logs):
            calls.append(run.step)

    with pytest.raises(CheckpointError, match="is a file, not a folder"):
        fit(Small(), batches(), torch.optim.SGD(Small().parameters(), lr=0.1), steps=50, checkpoint=blocker,
            callbacks=[Count()], progress=False, device="cpu")
    assert calls == []


def test_divergence_advice_resumes_from_the_last_sane_checkpoint_with_a_lower_rate(tmp_path):
    """The advice of TrainingDiverged, followed to the letter, works: the checkpoint it names has a sane loss (a
    finite but blown-up one is set aside, not resumed), and resume_lr replaces the rate the checkpoint stored."""

    class Blowup(Callback):  # someone sets a far too large rate after step 6
        def on_step_end(self, run, logs):
            if run.step == 6:
                for g in run.optimizer.param_groups:
                    g["lr"] = 80.0

    sh.seed(0)
    model = Small()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with pytest.raises(TrainingDiverged) as info:
        fit(model, batches(), opt, steps=200, checkpoint=tmp_path, checkpoint_every=2, callbacks=[Blowup()],
            progress=False, device="cpu")
    err = info.value
    assert err.checkpoint_step == 6 and err.checkpoint == tmp_path / "step-00000006"
    assert err.set_aside and all(p.name.startswith("diverged-step-") for p in err.set_aside)  # finite, not sane
    assert "resume_lr=" in str(err) and str(tmp_path) in str(err)
    state = torch.load(tmp_path / "step-00000006" / "state.pt", weights_only=True)
    assert state["optimizer"]["param_groups"][0]["lr"] == 80.0  # the trap: resuming restores the bad rate
    aside = torch.load(err.set_aside[0] / "state.pt", weights_only=True)
    assert not aside["sanity"]["sane"] and state["sanity"]["sane"]
    retry = Small()  # resuming without a new rate diverges again
    with pytest.raises(TrainingDiverged) as second:
        fit(retry, batches(), torch.optim.SGD(retry.parameters(), lr=0.05), steps=200, checkpoint=tmp_path,
            checkpoint_every=2, progress=False, device="cpu")
    assert second.value.checkpoint_step == 6
    # the advice: the same checkpoint folder, a lower rate
    again = Small()
    hist = fit(again, batches(), torch.optim.SGD(again.parameters(), lr=0.05), steps=30, checkpoint=tmp_path,
               resume_lr=0.01, progress=False, device="cpu")
    steps, losses = hist.series("loss")
    assert steps[0] == 1 and steps[-1] == 30 and all(math.isfinite(v) for v in losses)
    assert hist.series("lr/0")[1][-1] == 0.01 and losses[-1] < losses[5]
    assert {p.name for p in tmp_path.iterdir()} >= {p.name for p in err.set_aside}  # nothing deleted
