"""Inference backends for the CPU defaults: is there a faster way to embed than plain fp32 torch, and what does it
cost in agreement?

    python benchmarks/bench_backends.py [--texts 2000] [--queries 200] [--rounds 3] [--passages 1268]

Variants, all on the project's MiniLM (the encoder every paper's CPU default uses):

* ``torch-fp32`` — what every stage does today (the reference);
* ``torch-int8-dynamic`` — ``torch.ao.quantization.quantize_dynamic`` on the Linear layers (int8 weights, fp32
  activations; fbgemm/x86 kernels, AVX2 is enough);
* ``torch-bf16-autocast`` — the fp32 model run under ``torch.autocast("cpu", dtype=torch.bfloat16)``: matrix
  products in bfloat16 with float32 accumulation, layer norms, softmax and pooling in float32 (native bfloat16 dot
  products need AVX512-BF16 or AMX; without them oneDNN emulates and it is slower — ``machine.cpu_bf16`` says which);
* ``torch-bf16-weights`` — the whole model cast to bfloat16 (``model.to(torch.bfloat16)``), for comparison: every
  operation in bfloat16, pooling and normalisation included;
* ``onnx`` / ``onnx-int8`` and ``openvino`` — sentence-transformers' own backends, when they can be loaded next to
  the pinned torch / transformers (they need optimum-onnx or optimum-intel); when they cannot, the reason is
  recorded instead of a number;
* ``onnxruntime-direct`` — the ONNX path without optimum: the encoder's transformer exported with
  ``torch.onnx.export`` and run in ONNX Runtime, mean-pooled and normalised as the SentenceTransformer does, on the
  same length-sorted batches. ONNX Runtime is not a project dependency (nothing else would use it): install
  ``onnxruntime`` and ``onnx`` beside the environment to measure it; otherwise the variant is recorded as unavailable.

Training too (``train_step``): seconds per optimisation step of the same MiniLM (in-batch contrastive loss, AdamW,
``--train-batch`` texts of the first set at ``--train-length`` tokens), fp32 against bfloat16 autocast, best of
``--rounds`` means over ``--train-steps`` steps.

For each: throughput (texts per second, best of ``--rounds``), cosine to the fp32 vectors (mean and minimum), and
top-1 / top-10 retrieval agreement with fp32 when ``--queries`` of the texts search the rest. Two sets of texts,
because the answer depends on length: ``sentences`` (``--texts`` short real sentences: SEAT, SBIC, IndiBias) and
``passages`` (``--passages`` GenderBias-QA passages from ``ragcontrol_data``'s corpus, most of them longer than the
``cards.max_seq_length`` tokens every variant cuts at — what the costliest stages embed; skipped when that stage has
not run, 0 = skip).
Writes ``benchmarks/results/backends.json``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_foundation import text_sets  # noqa: E402


def timed_encode(model, texts: list[str], batch_size: int, rounds: int) -> tuple[np.ndarray, float]:
    model.encode(texts[:128], batch_size=batch_size)  # warm-up
    best, vecs = float("inf"), None
    for _ in range(rounds):
        t = time.perf_counter()
        vecs = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True)
        best = min(best, time.perf_counter() - t)
    return np.asarray(vecs, dtype=np.float32), len(texts) / best


def agreement(ref: np.ndarray, other: np.ndarray, n_queries: int) -> dict:
    cos = np.sum(ref * other, axis=1)
    q_ref, d_ref = ref[:n_queries], ref[n_queries:]
    q_o, d_o = other[:n_queries], other[n_queries:]
    top_ref = np.argsort(-(q_ref @ d_ref.T), axis=1)[:, :10]
    top_o = np.argsort(-(q_o @ d_o.T), axis=1)[:, :10]
    overlap10 = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top_ref, top_o, strict=True)])
    return {"cosine_mean": round(float(cos.mean()), 6), "cosine_min": round(float(cos.min()), 6),
            "top1_agreement": round(float(np.mean(top_ref[:, 0] == top_o[:, 0])), 4),
            "top10_overlap": round(float(overlap10), 4)}


class AutocastEncoder:
    """``torch-bf16-autocast`` (module doc): a SentenceTransformer's ``encode`` under bfloat16 autocast."""

    def __init__(self, model):
        self.model = model

    def encode(self, texts, **kwargs) -> np.ndarray:
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            return np.asarray(self.model.encode(texts, **kwargs), dtype=np.float32)


class OnnxRuntimeEncoder:
    """``onnxruntime-direct`` (module doc) with ``SentenceTransformer.encode``'s call shape, so :func:`timed_encode`
    times it like every other variant: vectors in input order, mean-pooled and normalised."""

    def __init__(self, folder, max_seq_length: int):
        import tempfile

        import onnxruntime as ort
        import torch

        from biaslab import models

        st = models.load_sentence_transformer(folder, "cpu")
        self.tokenizer, net, self.length = st[0].tokenizer, st[0].auto_model.eval(), max_seq_length
        self.dim = net.config.hidden_size

        class Hidden(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask):
                return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

        sample = self.tokenizer(["a sample", "another sample"], padding=True, return_tensors="pt")
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "encoder.onnx")
            torch.onnx.export(Hidden(net), (sample["input_ids"], sample["attention_mask"]), path,
                              input_names=["input_ids", "attention_mask"], output_names=["hidden"], opset_version=17,
                              dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask",
                                                                                    "hidden")}, dynamo=False)
            options = ort.SessionOptions()
            options.intra_op_num_threads = torch.get_num_threads()
            self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str], batch_size: int, **_) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts], kind="stable")  # as SentenceTransformer.encode batches them
        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start:start + batch_size]
            enc = self.tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=self.length,
                                 return_tensors="np")
            hidden = self.session.run(None, {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]})[0]
            mask = enc["attention_mask"][..., None].astype(np.float32)
            v = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
            out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--passages", type=int, default=1268)
    ap.add_argument("--train-batch", type=int, default=32)
    ap.add_argument("--train-length", type=int, default=96)
    ap.add_argument("--train-steps", type=int, default=5, help="0 = skip the training measurement")
    ap.add_argument("--max-seq-length", type=int, default=None, help="truncation of every variant (default: the "
                    "bias cards' cards.max_seq_length, the length every card embeds at)")
    args = ap.parse_args(argv)

    import torch

    from biaslab import models
    from biaslab.config import load_params

    params = load_params(ROOT / "params.yaml", sections=["models", "cards"])
    folder = models.preflight(["minilm"], params.models)["minilm"]
    if args.max_seq_length is None:
        args.max_seq_length = params.cards.max_seq_length
    out: dict = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                             "torch": torch.__version__, "threads": torch.get_num_threads(),
                             "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                             "cpu_bf16": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())},
                 "max_seq_length": args.max_seq_length}
    sets, out["sets"] = text_sets(args.texts, args.passages)
    for name, texts in sets.items():
        print(f"== {name}: {len(texts)} texts")
        queries = min(args.queries, len(texts) // 2)
        out["sets"][name] = {"texts": len(texts), "queries": queries,
                             "variants": measure_set(folder, texts, queries, args)}

    if args.train_steps:
        texts = sets.get("passages") or sets["sentences"]
        out["train_step"] = train_step(folder, texts[:args.train_batch], args.train_length, args.train_steps,
                                       args.rounds)
        print(f"train_step: {out['train_step']}")

    from biaslab.io import write_json

    path = write_json(ROOT / "benchmarks/results/backends.json", out)  # atomic; keys sorted like every results file
    print(f"wrote {path}")
    return 0


def train_step(folder, texts: list[str], length: int, steps: int, rounds: int) -> dict:
    """Seconds per optimisation step, fp32 and under bfloat16 autocast (module doc); each precision from the same
    fresh weights, with the first step's loss of each (how far autocast moves the loss itself)."""
    import torch

    from biaslab import models

    out: dict = {"texts": len(texts), "max_seq_length": length, "steps": steps}
    for name, enabled in (("fp32", False), ("bf16-autocast", True)):
        model = models.load_sentence_transformer(folder, "cpu")
        model.max_seq_length = length
        model.train()
        batch = dict(model.preprocess(texts))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        first = _step(model, batch, opt, enabled)
        best = float("inf")
        for _ in range(rounds):
            t = time.perf_counter()
            for _ in range(steps):
                _step(model, batch, opt, enabled)
            best = min(best, (time.perf_counter() - t) / steps)
        out[name] = {"s_per_step": round(best, 3), "first_loss": round(first, 6)}
    out["speedup"] = round(out["fp32"]["s_per_step"] / out["bf16-autocast"]["s_per_step"], 2)
    return out


def _step(model, batch: dict, opt, autocast: bool) -> float:
    """One step of an in-batch contrastive loss (each text against the next one's vector as its positive)."""
    import torch

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        emb = torch.nn.functional.normalize(model(dict(batch))["sentence_embedding"].float(), dim=-1)
        loss = torch.nn.functional.cross_entropy(20 * emb @ emb.roll(1, 0).T, torch.arange(len(emb)))
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.item()


def measure_set(folder, texts: list[str], queries: int, args) -> dict:
    """Every variant (module doc) on one set of texts: its record, or why it could not be measured."""
    import torch
    from sentence_transformers import SentenceTransformer

    from biaslab import models

    def loaded(**kwargs):
        m = (SentenceTransformer(str(folder), device="cpu", local_files_only=True, **kwargs) if kwargs
             else models.load_sentence_transformer(folder, "cpu"))
        m.max_seq_length = args.max_seq_length
        return m

    ref, ref_rate = timed_encode(loaded(), texts, args.batch_size, args.rounds)
    variants: dict = {"torch-fp32": {"texts_per_s": round(ref_rate, 1)}}
    print(f"torch-fp32: {ref_rate:.0f} texts/s")
    makers = {
        "torch-int8-dynamic": lambda: torch.ao.quantization.quantize_dynamic(loaded(), {torch.nn.Linear},
                                                                            dtype=torch.qint8),
        "torch-bf16-autocast": lambda: AutocastEncoder(loaded()),
        "torch-bf16-weights": lambda: loaded().to(torch.bfloat16),
        "onnx": lambda: loaded(backend="onnx"),
        "openvino": lambda: loaded(backend="openvino"),
        "onnxruntime-direct": lambda: OnnxRuntimeEncoder(folder, args.max_seq_length),
    }
    # what a variant's failure to load means: sentence-transformers' backends need optimum, which cannot be installed
    # beside the pinned stack; ONNX Runtime is not a dependency. Any other failure is a bug and stops the benchmark.
    unavailable = {"onnx": Exception, "openvino": Exception, "onnxruntime-direct": ImportError}
    for name, make in makers.items():
        try:
            model = make()
        except unavailable.get(name, ()) as err:
            variants[name] = {"unavailable": (f"{err}; install onnxruntime and onnx to measure it"
                                              if name == "onnxruntime-direct" else
                                              f"{type(err).__name__}: {str(err).splitlines()[0][:300]}")}
        else:
            vecs, rate = timed_encode(model, texts, args.batch_size, args.rounds)
            variants[name] = {"texts_per_s": round(rate, 1),
                              "speedup": round(rate / variants["torch-fp32"]["texts_per_s"], 2),
                              **agreement(ref, vecs, queries)}
        print(f"{name}: {variants[name]}")
    return variants


if __name__ == "__main__":
    sys.exit(main())
