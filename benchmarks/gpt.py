"""GPT: our ``GPTLMHeadModel`` against ``transformers.GPT2LMHeadModel`` (training step), and generation with and
without the KV cache.

    python benchmarks/gpt.py                              # cpu preset (4 x 256, pre-LN), batch 16 x 128, 1 thread
    python benchmarks/gpt.py --threads 2 --repeats 10
    python benchmarks/gpt.py --device cuda --preset full --norm pre --batch 32 --seq 512   # + MFU on a GPU
    python benchmarks/gpt.py --tiny                       # seconds (tests/test_benchmarks.py runs it)

Parts (``--part``, default all that apply):

* **train** -- one training step = forward + backward + AdamW update, in training mode (dropout as configured on
  embeddings, sub-layers and attention probabilities), for both models with the same config (pre-LN, tanh GELU:
  Hugging Face's GPT-2 is pre-LN only), the same initial weights (ours copied into Hugging Face's with
  ``to_hf_state_dict``) and the same ``(x, y)`` next-token batch; both losses are the mean cross-entropy of all
  ``B x T`` logits against ``y``. Hugging Face runs with ``attn_implementation="sdpa"`` where it has it (printed)
  and ``activation_function="gelu_pytorch_tanh"`` -- the same function as GPT-2's ``"gelu_new"`` through the fused
  kernel ours uses (``--hf-activation gelu_new`` times the released config's element-wise version). Before timing,
  the two losses are checked to agree in eval mode.
* **generate** -- tokens/s of :func:`shoulders.models.gpt.generate` with ``use_cache=True`` (each step feeds one
  token through the KV cache) and ``use_cache=False`` (each step re-reads the whole context), ``--new-tokens``
  after a ``--prompt``-token prompt, the model's position table widened to prompt + new tokens so neither
  truncates; the same samples from the same seed (checked).
* **mfu** (CUDA only) -- model FLOPs utilisation of our training step under bf16 autocast: FLOPs per step
  = 6 N (B T) + 12 L d T (B T) (Kaplan et al. 2020 / PaLM's count: N the parameters that multiply -- all but the
  position table, the tied output matrix once --, the second term the attention scores and their weighted sum,
  not halved for the causal mask) over the GPU's dense bf16 peak where its name is in ``PEAK_BF16``; else the
  achieved TFLOP/s alone.

Each variant is the median (and minimum) of ``--repeats`` runs, the variants taking turns (A, B, A, B, ...) so a
busy machine slows them alike; ratios ours / transformers (< 1: ours is faster) and cached / uncached tokens/s.
Needs ``transformers`` (the ``[test]`` extra) for the train part.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
from typing import Callable  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from shoulders._timing import alternate  # noqa: E402
from shoulders.models.gpt import GPTConfig, GPTLMHeadModel, generate  # noqa: E402
from shoulders.models.gpt_hf import hf_config, to_hf_state_dict  # noqa: E402

# dense bf16 tensor-core peaks (FLOP/s) from the vendors' data sheets, by a substring of the CUDA device name
PEAK_BF16 = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "L4": 121e12, "A10G": 70e12,
             "RTX 4090": 165e12}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def make_batch(cfg: GPTConfig, B: int, T: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(cfg.vocab_size, (B, T + 1), generator=g)
    return ids[:, :-1].to(device), ids[:, 1:].to(device)


def train_part(cfg: GPTConfig, args: argparse.Namespace, device: torch.device) -> None:
    import transformers

    ours = GPTLMHeadModel(cfg).to(device)
    hf_kwargs = {**hf_config(cfg), "activation_function": args.hf_activation}
    try:
        ref = transformers.GPT2LMHeadModel(transformers.GPT2Config(**hf_kwargs, attn_implementation="sdpa"))
    except (ValueError, ImportError):  # a transformers without SDPA for GPT-2
        ref = transformers.GPT2LMHeadModel(transformers.GPT2Config(**hf_kwargs))
    ref = ref.to(device)
    ref.load_state_dict(to_hf_state_dict(ours), strict=True)
    attn = getattr(ref.config, "_attn_implementation", "eager")
    x, y = make_batch(cfg, args.batch, args.seq, device)

    def ref_loss() -> torch.Tensor:
        logits = ref(input_ids=x).logits  # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())

    with torch.no_grad():  # same model, same loss
        loss_ours = ours.eval()(x, y)["loss"].item()
        loss_ref = ref.eval().forward(input_ids=x).logits
        loss_ref = F.cross_entropy(loss_ref.flatten(0, 1).float(), y.flatten()).item()
    assert abs(loss_ours - loss_ref) < 1e-4 * max(1.0, abs(loss_ref)), (loss_ours, loss_ref)
    ours.train()
    ref.train()
    opt_ours = torch.optim.AdamW(ours.parameters(), lr=1e-4)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-4)

    def step_ours() -> None:
        opt_ours.zero_grad(set_to_none=True)
        ours(x, y)["loss"].backward()
        opt_ours.step()

    def step_ref() -> None:
        opt_ref.zero_grad(set_to_none=True)
        ref_loss().backward()
        opt_ref.step()

    names = ("ours (GPTLMHeadModel)", f"transformers.GPT2LMHeadModel ({attn})")
    print(f"== training step: {cfg.n_layers} layers x d {cfg.d_model}, {cfg.n_heads} heads, d_ff {cfg.d_ff}, "
          f"vocab {cfg.vocab_size}, {ours.num_parameters() / 1e6:.2f}M parameters, batch {args.batch} x {args.seq}, "
          f"dropout {cfg.dropout}/{cfg.attn_dropout}, forward + backward + AdamW, train mode, "
          f"{args.repeats} alternating rounds ==")
    print(f"   Hugging Face: attn_implementation={attn!r}, activation_function={args.hf_activation!r}")
    print(f"   losses before training (eval mode): ours {loss_ours:.5f} | transformers {loss_ref:.5f}")
    times = alternate(dict(zip(names, (step_ours, step_ref))), args.repeats, args.warmup, lambda: sync(device))
    ratios = [a / b for a, b in zip(times[names[0]], times[names[1]])]
    for name in names:
        ts = times[name]
        print(f"  {name:<46} median {statistics.median(ts) * 1e3:9.1f} ms   min {min(ts) * 1e3:9.1f} ms")
    a, b = times[names[0]], times[names[1]]
    print(f"  ratio ours/transformers: median {statistics.median(a) / statistics.median(b):.3f}"
          f"   min {min(a) / min(b):.3f}   median of the rounds' ratios "
          f"{statistics.median(ratios):.3f}")


def generate_part(cfg: GPTConfig, args: argparse.Namespace, device: torch.device) -> None:
    cfg = cfg.replace(max_len=max(cfg.max_len, args.prompt + args.new_tokens))
    torch.manual_seed(0)
    model = GPTLMHeadModel(cfg).to(device).eval()
    prompt = torch.randint(cfg.vocab_size, (args.prompt,), generator=torch.Generator().manual_seed(1)).tolist()
    out: dict[bool, list[int]] = {}

    def run(use_cache: bool) -> Callable[[], None]:
        def go() -> None:
            out[use_cache] = generate(model, prompt, args.new_tokens, top_k=args.top_k, use_cache=use_cache,
                                      generator=torch.Generator().manual_seed(0))
        return go

    names = ("with the KV cache", "without (re-read the context)")
    print(f"== generation: {args.new_tokens} new tokens after a {args.prompt}-token prompt, same model "
          f"({cfg.n_layers} x {cfg.d_model}, vocab {cfg.vocab_size}), top_k={args.top_k}, batch 1, "
          f"{args.gen_repeats} alternating rounds ==")
    times = alternate(dict(zip(names, (run(True), run(False)))), args.gen_repeats, 0, lambda: sync(device))
    same = out[True] == out[False]
    speed = {name: args.new_tokens / statistics.median(ts) for name, ts in times.items()}
    best = {name: args.new_tokens / min(ts) for name, ts in times.items()}
    for name in names:
        print(f"  {name:<32} median {speed[name]:9.1f} tokens/s   best {best[name]:9.1f} tokens/s")
    print(f"  ratio cached/uncached: median {speed[names[0]] / speed[names[1]]:.2f}   "
          f"best {best[names[0]] / best[names[1]]:.2f}   same tokens: {same}")


def mfu_part(cfg: GPTConfig, args: argparse.Namespace, device: torch.device) -> None:
    model = GPTLMHeadModel(cfg).to(device).train()
    x, y = make_batch(cfg, args.batch, args.seq, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(x, y)["loss"]
        loss.backward()
        opt.step()

    times = alternate({"step": step}, args.repeats, max(args.warmup, 2), lambda: sync(device))["step"]
    N = model.num_parameters() - model.transformer.W_p.embed.weight.numel()
    tokens = args.batch * args.seq
    flops = 6 * N * tokens + 12 * cfg.n_layers * cfg.d_model * args.seq * tokens
    name = torch.cuda.get_device_name(device)
    peak = next((v for k, v in PEAK_BF16.items() if k in name), None)
    achieved = flops / statistics.median(times)
    print(f"== MFU on {name}: batch {args.batch} x {args.seq}, bf16 autocast, {N / 1e6:.1f}M multiplying "
          f"parameters, {flops / 1e12:.3f} TFLOP a step ==")
    print(f"  step median {statistics.median(times) * 1e3:.1f} ms (min {min(times) * 1e3:.1f}), "
          f"{achieved / 1e12:.1f} TFLOP/s, {tokens / statistics.median(times):,.0f} tokens/s"
          + (f", MFU {achieved / peak:.1%} of {peak / 1e12:.0f} TFLOP/s bf16" if peak else
             " (peak unknown for this GPU: no MFU)"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="cpu", choices=["smoke", "cpu", "full"])
    p.add_argument("--norm", default="pre", choices=["pre", "post"], help="post-LN skips the Hugging Face part")
    p.add_argument("--activation", default="gelu_tanh")
    p.add_argument("--hf-activation", default="gelu_pytorch_tanh", help="gelu_new: the released config's name")
    p.add_argument("--part", nargs="+", default=["train", "generate", "mfu"], choices=["train", "generate", "mfu"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--new-tokens", type=int, default=256)
    p.add_argument("--gen-repeats", type=int, default=3)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--tiny", action="store_true", help="smoke preset, tiny batch and vocabulary: seconds")
    args = p.parse_args()
    if args.tiny:
        args.preset, args.batch, args.seq, args.vocab, args.repeats, args.warmup = "smoke", 2, 16, 100, 1, 0
        args.prompt, args.new_tokens, args.gen_repeats = 4, 8, 1

    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = GPTConfig.preset(args.preset, vocab_size=args.vocab, norm=args.norm, activation=args.activation)
    cfg = cfg.replace(max_len=max(cfg.max_len, args.seq))
    try:
        import transformers
        versions = f"transformers {transformers.__version__}"
    except ImportError:
        transformers, versions = None, "no transformers"
    print(f"torch {torch.__version__}, {versions}, {device}, {torch.get_num_threads()} CPU thread(s), "
          f"load average {load_average()}")
    if "train" in args.part:
        if transformers is None or cfg.norm != "pre":
            print("== training step: skipped (needs transformers, and a pre-LN model: Hugging Face's GPT-2 is "
                  "pre-LN only) ==")
        else:
            train_part(cfg, args, device)
    if "generate" in args.part:
        generate_part(cfg, args, device)
    if "mfu" in args.part and device.type == "cuda":
        mfu_part(cfg, args, device)
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
