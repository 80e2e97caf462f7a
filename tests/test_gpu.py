"""What only a CUDA device can show: the GPU path gives the CPU path's results. Skipped without a GPU; on a GPU
machine run them first with ``pytest -m gpu``."""

import numpy as np
import pytest
import torch

from conftest import model_dir
from fixtures import cscl_toy, ragfair_pairs

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

TEXTS = ["The nurse said she would be late.", "The engineer fixed it himself.", "A quiet morning in the park.",
         "word " * 300]


def test_auto_picks_the_gpu():
    from biaslab.runtime import select_device

    assert select_device("auto") == "cuda" and select_device("cuda:0") == "cuda:0"


def test_the_encoder_gives_the_cpus_vectors_on_the_gpu():
    from biaslab.embed import Encoder

    cpu = Encoder(model_dir("minilm"), device="cpu", batch_size=8, cache=False).encode(TEXTS)
    gpu = Encoder(model_dir("minilm"), device="cuda", batch_size=8, cache=False)
    assert gpu.model.device.type == "cuda"
    np.testing.assert_allclose(gpu.encode(TEXTS), cpu, atol=1e-4)


def test_the_search_on_the_gpu_finds_the_exact_neighbours():
    from biaslab.index import DenseIndex

    rng = np.random.default_rng(0)
    docs, queries = rng.normal(size=(2000, 64)), rng.normal(size=(50, 64))
    idx = DenseIndex(docs, search_backend="torch")  # the GPU image has no FAISS
    assert idx.on_gpu
    scores, ids = idx.search(queries, 10)
    dn = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    sims = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ dn.T
    want = np.argsort(-sims, axis=1)[:, :10]
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_allclose(scores, np.take_along_axis(sims, want, 1), atol=1e-4)


def test_a_debiasing_run_trains_on_the_gpu_and_saves_a_checkpoint_the_cpu_loads(tmp_path):
    from biaslab.embed import Encoder
    from biaslab.ragfair import debias
    from biaslab.train import encoder_layers, transformer

    pairs = ragfair_pairs(16)
    cfg = debias.MethodConfig(lora=True, wiseft=False, alpha=1.0, beta=1e-4, tau=0.05, fair_variant="squared",
                              lora_r=8, lora_alpha=16, lora_dropout=0.1, lora_targets=("query", "key", "value"),
                              wiseft_layers=2, wiseft_lambda=0.5)
    out, summary = debias.train(model_dir("minilm"), pairs, tmp_path / "lora", cfg, epochs=1, batch_size=8,
                                learning_rate=1e-4, warmup_ratio=0.0, max_grad_norm=1.0, seed=0, device="cuda",
                                max_seq_length=32, record={}, probe_batches=1)
    assert summary["steps"] == 2 and np.isfinite(summary["train_loss"]) and len(summary["fair_terms_after"]) == 2
    enc = Encoder(out, device="cpu", batch_size=8, cache=False)  # saved from the GPU, read on the CPU
    assert len(encoder_layers(transformer(enc.model))) == 6 and enc.encode(TEXTS[:2]).shape == (2, 384)
    peak = torch.cuda.max_memory_allocated() / 2**30
    assert 0 < peak < 8, f"peak GPU memory {peak:.2f} GiB for a 16-pair run"


def test_every_cscl_method_trains_and_predicts_on_the_gpu():
    """One run of each trained cscl method at its first grid value (CE, two-stage and one-stage CL, the adversaries)
    on the GPU: the encoder trained on CUDA, its test rows predicted, their equalized-odds gaps scored."""
    import pandas as pd

    from biaslab.config import load_params
    from biaslab.cscl import experiment, train

    P = load_params(sections=["cscl"]).cscl
    toy = cscl_toy()
    rows = pd.concat([toy.assign(split=s) for s in ("train", "val", "test")], ignore_index=True)
    views = {t: [t + " indeed", t.upper()] for t in toy["text"]}
    cfg = P.train.model_copy(update={"epochs": 1, "pretrain_epochs": 1, "head_epochs": 2, "batch_size": 4,
                                     "pretrain_batch_size": 4, "max_length": 16, "trainable_layers": None})
    trained = {n: m for n, m in P.methods.items() if m.mode != "inlp"}
    assert {m.mode for m in trained.values()} >= {"ce", "contrastive", "one_stage", "adversarial"}
    for name, method in trained.items():
        value = None if method.mode == "ce" else method.grid[0]
        res = experiment.run_method(method, value, rows, views, bank=train.StateBank(0),
                                    encoder_dir=model_dir("minilm"), train=cfg, seed=0, device="cuda")
        assert res["pred"].shape == (8,) and res["test_features"].shape == (8, 384), name
        assert 0 <= res["scores"]["eo_gap"] <= 1, name
        if method.mode == "adversarial":
            assert 0 <= res["adversaries"]["adv_group_accuracy"] <= 1, name
