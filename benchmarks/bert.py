"""BERT pre-training step: our ``BertForPreTraining`` against ``transformers.BertForPreTraining``, like for like.

    python benchmarks/bert.py                                # mini (L4/H256/A4), batch 32 x 128, vocab 8000, 1 thread
    python benchmarks/bert.py --size small --threads 4 --repeats 10
    python benchmarks/bert.py --device cuda --batch 128

One training step = forward + backward + AdamW update, in training mode (dropout 0.1 on embeddings, sub-layers and
attention probabilities), for both models with the same config, the same initial weights (ours copied into
Hugging Face's with ``to_hf_state_dict``) and the same batch: ``[CLS] A [SEP] B [SEP]``-like segments, rows padded
to random lengths in [T/2, T], ``--mask-prob`` of the real tokens chosen for MLM, NSP labels. Before timing, the
two losses are checked to agree in eval mode.

Three numbers, each the median of ``--repeats`` steps (the variants take turns, so a busy machine slows them alike):

* **ours, MLM at masked positions** -- the default: the vocabulary projection (``|V| x d`` per token) only at the
  ~15% chosen positions;
* **ours, MLM at every position** -- ``masked_only=False``: the same work as Hugging Face (like for like);
* **transformers** -- ``BertForPreTraining(labels=…, next_sentence_label=…)``, which projects every position.

and the ratios ours / transformers (< 1: ours is faster). Needs ``transformers`` (the ``[test]`` extra).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402

import torch  # noqa: E402

from shoulders.models.bert import BertConfig, BertForPreTraining  # noqa: E402
from shoulders.text.bert_inputs import IGNORE  # noqa: E402
from shoulders.models.bert_hf import hf_config, to_hf_state_dict  # noqa: E402


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_batch(cfg: BertConfig, B: int, T: int, mask_prob: float, device: torch.device) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    keep = torch.arange(T)[None, :] < lengths[:, None]  # (B, T) True = real token
    ids = torch.randint(5, cfg.vocab_size, (B, T), generator=g)
    ids[:, 0] = 2  # [CLS]
    ids[~keep] = cfg.pad_id
    segments = ((torch.arange(T)[None, :] >= lengths[:, None] // 2) & keep).long()  # A then B
    chosen = (torch.rand(B, T, generator=g) < mask_prob) & keep
    chosen[:, 0] = False
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    ids[chosen] = 4  # [MASK]
    nsp = torch.randint(0, 2, (B,), generator=g)
    batch = {"input_ids": ids, "token_type_ids": segments, "attention_mask": keep, "mlm_labels": labels,
             "nsp_labels": nsp}
    return {k: v.to(device) for k, v in batch.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", default="mini", choices=sorted(BertConfig.SIZES))
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--mask-prob", type=float, default=0.15)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    args = p.parse_args()
    import transformers

    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = BertConfig.named(args.size, vocab_size=args.vocab, max_len=max(512, args.seq))
    ours = BertForPreTraining(cfg).to(device)
    ref = transformers.BertForPreTraining(transformers.BertConfig(**hf_config(cfg))).to(device)
    ref.load_state_dict(to_hf_state_dict(ours), strict=True)
    b = make_batch(cfg, args.batch, args.seq, args.mask_prob, device)
    inputs = {k: b[k] for k in ("input_ids", "token_type_ids", "attention_mask")}
    hf_inputs = {**inputs, "attention_mask": b["attention_mask"].long(), "labels": b["mlm_labels"],
                 "next_sentence_label": b["nsp_labels"]}

    with torch.no_grad():  # same model, same loss
        loss_ours = ours.eval()(**b)["loss"].item()
        loss_ref = ref.eval()(**hf_inputs).loss.item()
    assert abs(loss_ours - loss_ref) < 1e-3 * max(1.0, abs(loss_ref)), (loss_ours, loss_ref)
    ours.train()
    ref.train()
    opt_ours = torch.optim.AdamW(ours.parameters(), lr=1e-4)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-4)

    def step_ours(masked_only: bool) -> Callable[[], None]:
        def run() -> None:
            opt_ours.zero_grad(set_to_none=True)
            ours(**b, masked_only=masked_only)["loss"].backward()
            opt_ours.step()
        return run

    def step_ref() -> None:
        opt_ref.zero_grad(set_to_none=True)
        ref(**hf_inputs).loss.backward()
        opt_ref.step()

    variants = {"ours, MLM at masked positions (default)": step_ours(True),
                "ours, MLM at every position (like for like)": step_ours(False),
                "transformers.BertForPreTraining": step_ref}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(args.warmup + args.repeats):
        for name, fn in variants.items():  # take turns: contention hits every variant alike
            sync(device)
            t = time.perf_counter()
            fn()
            sync(device)
            if r >= args.warmup:
                times[name].append(time.perf_counter() - t)
    med = {name: statistics.median(ts) for name, ts in times.items()}

    n_chosen = int((b["mlm_labels"] != IGNORE).sum())
    n_real = int(b["attention_mask"].sum())
    L, H, A = BertConfig.SIZES[args.size]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {device}, "
          f"{torch.get_num_threads()} CPU thread(s)")
    print(f"== BERT-{args.size} (L{L}/H{H}/A{A}, {ours.num_parameters() / 1e6:.1f}M parameters), vocab "
          f"{args.vocab}, batch {args.batch} x {args.seq} ({n_real} real tokens, {n_chosen} to predict), "
          f"forward + backward + AdamW, train mode, median of {args.repeats} ==")
    print(f"   losses before training (eval mode): ours {loss_ours:.5f} | transformers {loss_ref:.5f}")
    ref_t = med["transformers.BertForPreTraining"]
    for name, t in med.items():
        ratio = "" if name.startswith("transformers") else f"   ratio ours/transformers {t / ref_t:.2f}"
        print(f"  {name:<46} {t * 1e3:9.1f} ms{ratio}")


if __name__ == "__main__":
    main()
