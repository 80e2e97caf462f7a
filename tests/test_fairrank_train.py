"""fairrank rankers on the real MiniLM backbone with tiny data, both families (the dense bi-encoder and the
cross-encoder): the frozen-bottom ranker scores like the full model (the bi-encoder like sentence-transformers'
cosine), only the top trains, λ and the adversary reach the weights, and the penalty acts only through Ψ."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from biaslab.fairrank import prepare
from biaslab.fairrank import train as ft

from conftest import model_dir

pytestmark = pytest.mark.slow

TEXTS = {"p1": "she is a nurse and she works nights", "p2": "the engine needs oil every month",
         "n1": "he repaired the car himself", "n2": "rainfall in spring was heavy",
         "p3": "a doctor treats patients", "n3": "his brother plays football"}
PAIRS = pd.DataFrame({"qid": ["1", "1", "2", "2"], "query": ["night nurse", "night nurse", "car care", "car care"],
                      "pos": ["p1", "p1", "p2", "p3"], "neg": ["n1", "n2", "n3", "n2"]})


def terms(psi_zero: bool = False):
    t = pd.DataFrame({"docid": list(TEXTS), "n_tokens": 6, "def_f": [2, 0, 0, 0, 0, 0], "def_m": [0, 0, 1, 0, 0, 1],
                      "rep_f": [2, 0, 0, 0, 0, 0], "rep_m": [0, 0, 1, 0, 0, 1]})
    if psi_zero:
        t[["def_f", "def_m"]] = 0
    t["psi"] = (t["def_f"] > 0).astype(float) - (t["def_m"] > 0).astype(float)
    t["zeta"] = 1.0
    return t


@pytest.fixture(scope="module", params=ft.FAMILIES)
def setup(request):
    md = model_dir("minilm")
    rows = pd.concat([prepare.pointwise_rows(PAIRS)[["qid", "query", "docid"]]])
    bank = ft.ranker_states(md, rows, TEXTS, family=request.param, n_frozen=5, max_length=32, batch_size=4,
                            device="cpu")
    return md, bank, ft.make_inputs(md, bank, TEXTS, 32, family=request.param), request.param


def trained(setup, objective, t=None):
    md, _bank, inputs, family = setup
    m = ft.build_ranker(md, objective, family=family, n_frozen=5, seed=0)
    items = ft.training_items(PAIRS, objective, terms() if t is None else t, inputs, psi_mode="signed",
                              zeta_pos="measured")
    ft.fit(m, items, inputs, epochs=2, batch_size=2, learning_rate=1e-3, head_learning_rate=1e-3, warmup=0.0, seed=0, device="cpu")
    return m


def weights(m):
    return torch.cat([p.detach().flatten() for n, p in m.hf.named_parameters() if p.requires_grad])


def test_frozen_scores_equal_the_full_model(setup):
    md, _bank, inputs, family = setup
    m = ft.build_ranker(md, ft.Objective("pairwise", "none", "both", 0.0, 1.0, 0.0, 0), family=family, n_frozen=5,
                        seed=0)
    rows = prepare.pointwise_rows(PAIRS)
    got = ft.score(m, rows, inputs, batch_size=3)
    full = ft.make_inputs(md, None, TEXTS, 32, family=family)
    m.n_frozen = 0  # the same weights, run on token ids through the whole model
    want = ft.score(m, rows, full, batch_size=3)
    np.testing.assert_allclose(got, want, atol=2e-3)  # float16 states
    if family == "bi_encoder":  # untrained, the dense ranker is the shipped sentence encoder's cosine
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(md), device="cpu")
        st.max_seq_length = 32
        q = st.encode(rows["query"].tolist(), normalize_embeddings=True)
        d = st.encode([TEXTS[x] for x in rows["docid"]], normalize_embeddings=True)
        np.testing.assert_allclose(want, (q * d).sum(1), atol=1e-5)


def test_only_the_top_trains_and_lambda_reaches_the_weights(setup):
    base = trained(setup, ft.Objective("pairwise", "none", "both", 0.0, 1.0, 0.0, 0))
    fresh = ft.build_ranker(setup[0], ft.Objective("pairwise", "none", "both", 0.0, 1.0, 0.0, 0), family=setup[3],
                            n_frozen=5, seed=0)
    bottom = [n for n, p in fresh.hf.named_parameters() if not p.requires_grad]
    assert bottom and all(torch.equal(dict(base.hf.named_parameters())[n], dict(fresh.hf.named_parameters())[n])
                          for n in bottom)
    assert not torch.equal(weights(base), weights(fresh))
    pen = trained(setup, ft.Objective("pairwise", "penalty", "both", 1.0, 1.0, 0.0, 0))
    assert not torch.equal(weights(pen), weights(base))
    # with every Ψ = 0 the penalty has nothing to act on: the same weights as the base ranker
    pen0 = trained(setup, ft.Objective("pairwise", "penalty", "both", 1.0, 1.0, 0.0, 0), terms(psi_zero=True))
    assert torch.equal(weights(pen0), weights(base))


def test_advbert_adversary_changes_the_ranker(setup):
    base = trained(setup, ft.Objective("pairwise", "none", "both", 0.0, 1.0, 0.0, 0))
    adv = trained(setup, ft.Objective("pairwise", "none", "both", 0.0, 1.0, 1.0, 8))
    assert not torch.equal(weights(adv), weights(base))


def test_pointwise_ranker_trains(setup):
    md, _bank, inputs, family = setup
    obj = ft.Objective("pointwise", "penalty", "irrelevant", 1.0, 1.0, 0.0, 0)
    m = ft.build_ranker(md, obj, family=family, n_frozen=5, seed=0)
    items = ft.training_items(prepare.pointwise_rows(PAIRS), obj, terms(), inputs, psi_mode="abs", zeta_pos="one")
    assert [it["term"] for it in items if it["label"] == 0] == [1.0, 0.0, 1.0, 0.0]  # |Ψ| of n1, n2, n3, n2
    log = ft.fit(m, items, inputs, epochs=1, batch_size=2, learning_rate=1e-3, head_learning_rate=1e-3, warmup=0.0, seed=0, device="cpu")
    assert np.isfinite(log["train_loss"])


def test_the_data_stage_saves_each_backbones_frozen_states(setup, tmp_path):
    """fairrank_data's banks: the top ``trainable_layers`` left out, the rest as ranker_states computes them."""
    from biaslab.frozen import StateBank

    md, bank, _inputs, family = setup
    rows = prepare.pointwise_rows(PAIRS)[["qid", "query", "docid"]]
    lines = ft.save_state_banks({"minilm": md}, ["minilm"], rows, TEXTS, trainable_layers=1, family=family,
                                max_length=32, batch_size=4, device="cpu", out_dir=tmp_path)
    saved = StateBank.load(tmp_path / "minilm.npz")
    assert saved.n_frozen == bank.n_frozen == 5 and len(saved) == len(bank)
    np.testing.assert_array_equal(saved.flat, bank.flat)
    assert lines == [f"minilm: 5 frozen layers, states of {len(bank)} texts or pairs "
                     f"({bank.flat.nbytes / 2**20:.0f} MiB)"]


@pytest.mark.parametrize("family", ft.FAMILIES)
def test_a_pairs_frozen_states_do_not_depend_on_the_pairs_computed_with_it(family):
    """Every pair's (or query's and passage's) states are the ones it gets alone: in the length-sorted padded
    batches they were computed in before, a change of the pair set (another sample, another fold) moved them."""
    md = model_dir("minilm")
    rows = prepare.pointwise_rows(PAIRS)[["qid", "query", "docid"]]
    kw = dict(family=family, n_frozen=5, max_length=32, batch_size=4, device="cpu")
    together = ft.ranker_states(md, rows, TEXTS, **kw)
    alone = [ft.ranker_states(md, rows.iloc[[i]], TEXTS, **kw) for i in range(len(rows))]
    moved = [k for bank in alone for k in bank.texts if not np.array_equal(bank.get(k), together.get(k))]
    assert not moved, f"{len(moved)} items got other states beside other pairs: {moved}"
    assert len(ft.ranker_states(md, rows.iloc[:0], TEXTS, **kw)) == 0
