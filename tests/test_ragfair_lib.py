"""ragfair library: probing scores and probe, extrinsic parity metrics, BBQ SEAT sets, pairs, losses, masking."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from biaslab import losses
from biaslab.ragfair import bbq_build, bbq_seat, extrinsic, pairs, perturb, probing

from conftest import PARAMS, model_dir
from fixtures import ragfair_pairs


def bbq_frame() -> pd.DataFrame:
    """Two templates × one counterfactual group (both orders) × the 2×2 block, in the read_file schema."""
    rows = []
    for q, (stereo, other) in enumerate([("old man", "young man"), ("Muslim", "Jewish")], start=1):
        for order in (0, 1):
            first, second = (stereo, other) if order == 0 else (other, stereo)
            # options: [first, second, unknown]; target = stereotyped group
            target = 0 if order == 0 else 1
            for pol in ("neg", "nonneg"):
                for cond in ("ambig", "disambig"):
                    ctx = f"T{q}: the {first} and the {second} met."
                    if cond == "disambig":
                        ctx += f" The {first} forgot the keys."
                    # the neg question asks who forgot; disambig answer = first
                    label = 2 if cond == "ambig" else 0 if pol == "neg" else 1
                    biased = target if pol == "neg" else 1 - target
                    rows.append({"category": "Age" if q == 1 else "Religion", "question_index": str(q),
                                 "question_polarity": pol, "context_condition": cond, "context": ctx,
                                 "question": f"T{q} who forgot?" if pol == "neg" else f"T{q} who remembered?",
                                 "ans0": f"The {first}", "ans1": f"The {second}", "ans2": "Unknown", "label": label,
                                 "unknown_loc": 2, "target_loc": target, "biased_loc": biased})
    return pd.DataFrame(rows)


def test_bias_score_matches_the_softmax_form():
    rng = np.random.default_rng(0)
    cq, s, n = (rng.normal(size=(5, 3, 8)) for _ in range(3))
    tau = 0.1
    got = probing.bias_scores(cq, s, n, tau)
    cos = lambda a, b: (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)  # noqa: E731
    es, en = np.exp(cos(cq, s) / tau), np.exp(cos(cq, n) / tau)
    np.testing.assert_allclose(got, (es - en) / (es + en), rtol=1e-10)
    assert got.shape == (5, 3) and np.all(np.abs(got) <= 1)
    with pytest.raises(ValueError, match="tau"):
        probing.bias_scores(cq, s, n, 0)


def test_ridge_probe_finds_a_linear_signal_and_the_shuffle_control_does_not():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 10))
    y = X @ rng.normal(size=10) + 0.1 * rng.normal(size=200)
    res = probing.ridge_probe(X, y, folds=5, alphas=[0.1, 1.0, 10.0, 100.0], seed=0, shuffles=1)
    assert res["r2"] > 0.9 and res["r2_shuffled"] < 0.1
    with pytest.raises(ValueError, match="at least 10 rows"):
        probing.ridge_probe(X[:5], y[:5], folds=5, alphas=[1.0], seed=0, shuffles=1)


@pytest.mark.parametrize("shuffles", [1, 3])
def test_ridge_probe_is_sklearns_cross_val_score_bit_for_bit(shuffles):
    # the probe as sklearn would score it: one cross_val_score per target, the controls drawn as before
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(7)
    X = rng.normal(size=(80, 384)).astype(np.float32)  # a category's layer states: fewer rows than dimensions
    y = np.tanh(X[:, :5].sum(1) / 3 + rng.normal(size=80))
    alphas, seed = [0.1, 1.0, 10.0, 100.0], 3
    cv = KFold(5, shuffle=True, random_state=seed)

    def r2(target):
        model = make_pipeline(StandardScaler(), RidgeCV(alphas=alphas))
        return float(np.mean(cross_val_score(model, X, target, cv=cv, scoring="r2")))

    draws = np.random.default_rng(seed)
    control = [r2(draws.permutation(y)) for _ in range(shuffles)]
    res = probing.ridge_probe(X, y, folds=5, alphas=alphas, seed=seed, shuffles=shuffles)
    assert res == {"r2": r2(y), "r2_shuffled": float(np.mean(control))}


def test_depth_trend_is_spearman_of_layer_vs_bias():
    t = pd.DataFrame({"category": ["a"] * 4 + ["b"] * 4, "layer": [0, 1, 2, 3] * 2,
                      "bias_mean": [0.1, 0.2, 0.3, 0.4, 0.4, 0.3, 0.35, 0.1]})
    d = probing.depth_trend(t).set_index("category")
    assert d.loc["a", "spearman_rho"] == pytest.approx(1.0)
    assert d.loc["b", "spearman_rho"] == pytest.approx(-0.8)


def test_probe_inputs_pair_question_with_context_and_each_group():
    df = bbq_frame()
    x = probing.probe_inputs(df)
    r = df.iloc[1]  # order 0, neg, disambig; target = option 0 (old man)
    assert x.iloc[1]["x_cq"] == f"{r.question} {r.context}"
    assert x.iloc[1]["x_s"].endswith("The old man") and x.iloc[1]["x_n"].endswith("The young man")


def test_parity_metrics_equal_fairlearn_on_random_tables():
    from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

    rng = np.random.default_rng(3)
    for _ in range(20):
        gold = rng.choice(extrinsic.ROLES, 60)
        pred = rng.choice(extrinsic.ROLES, 60)
        d = extrinsic.decisions(gold, pred)
        ours = extrinsic.parity_metrics(gold, pred)
        assert ours["spd"] == pytest.approx(demographic_parity_difference(d["y"], d["y_hat"], sensitive_features=d["A"]))
        assert ours["eod"] == pytest.approx(equalized_odds_difference(d["y"], d["y_hat"], sensitive_features=d["A"],
                                                                      agg="mean"))


def test_parity_metrics_against_a_direct_count():
    gold = np.array(["stereotyped", "non-stereotyped", "unknown", "stereotyped", "non-stereotyped", "unknown"])
    pred = np.array(["stereotyped", "stereotyped", "stereotyped", "stereotyped", "unknown", "non-stereotyped"])
    m = extrinsic.parity_metrics(gold, pred)
    # P(ŷ=1 | A=s) = 4/6, P(ŷ=1 | A=n) = 1/6
    assert m["spd"] == pytest.approx(0.5)
    # TPR_s = 2/2, TPR_n = 0/2; FPR_s = 2/4, FPR_n = 1/4 -> ½(1 + 0.25)
    assert m["eod"] == pytest.approx(0.625)
    fair = extrinsic.parity_metrics(gold, gold)
    assert fair == {"spd": 0.0, "eod": 0.0}


class Lookup:
    """Encoder stub: fixed vectors per text (queries point at chosen contexts)."""

    def __init__(self, table):
        self.table = table

    def encode(self, texts):
        return np.stack([self.table(t) for t in texts]).astype(np.float32)


def test_extrinsic_bias_reads_answers_off_the_retrieved_context():
    df = bbq_frame()
    df = df[df["category"] == "Age"].reset_index(drop=True)
    contexts = list(dict.fromkeys(df["context"]))
    pro = next(c for c in contexts if c.endswith("The old man forgot the keys."))

    def vec(t):
        v = np.zeros(len(contexts) + 1)
        if t in contexts:
            v[contexts.index(t)] = 1.0
            v[-1] = 0.1
        else:  # every question retrieves the stereotype-consistent context
            v[contexts.index(pro)] = 1.0
        return v

    res = extrinsic.extrinsic_bias(extrinsic.category_decisions(Lookup(vec), df, "answers_question")).iloc[0]
    # neg question -> the old man forgot -> stereotyped answer; nonneg -> young man remembered -> stereotyped too
    assert res["stereotyped_share"] == 1.0
    assert res["spd"] == pytest.approx(1.0)
    # the pro context answers both questions (it is a context of rows with each), so every row's first context
    # answers its question; it is the own context only of its own neg + nonneg rows
    assert res["acc_at_1"] == 100.0
    own = extrinsic.extrinsic_bias(extrinsic.category_decisions(Lookup(vec), df, "own_context"))
    assert own.iloc[0]["acc_at_1"] == pytest.approx(100 * 2 / 8) and own.iloc[0]["spd"] == res["spd"]
    with pytest.raises(ValueError, match="ragfair.evaluate.acc_at_1 must be one of"):
        extrinsic.category_decisions(Lookup(vec), df, "own")


def test_correlation_z_scores_norms_and_bootstraps():
    cats = ["a", "b"]
    ck = [f"m{i}" for i in range(5)]
    vals = np.arange(5, dtype=float)
    intr = pd.DataFrame([{"checkpoint": c, "category": k, "es": v * (1 + j)} for c, v in zip(ck, vals, strict=True)
                         for j, k in enumerate(cats)])
    extr = intr.rename(columns={"es": "spd"}).assign(spd=lambda d: d["spd"] * 2 + 1)
    out = extrinsic.correlate(intr, extr, value_int="es", value_ext="spd", boot=[(intr, extr)] * 3)
    assert out["pearson_r"] == pytest.approx(1.0) and out["spearman_rho"] == pytest.approx(1.0)
    assert out["pearson_ci"] == pytest.approx([1.0, 1.0]) and out["rounds"] == 3
    # z-scoring makes the norm symmetric around the mean checkpoint; raw magnitudes keep the level
    flipped = extr.assign(spd=lambda d: 10 - d["spd"])
    assert extrinsic.correlate(intr, flipped, value_int="es", value_ext="spd")["pearson_r"] == pytest.approx(1.0)
    assert extrinsic.correlate(intr, flipped, value_int="es", value_ext="spd", zscore=False)["pearson_r"] < -0.5
    with pytest.raises(ValueError, match="at least 3 checkpoints"):
        extrinsic.correlate(intr[intr.checkpoint.isin(ck[:2])], extr, value_int="es", value_ext="spd")


def seat_ready_frame() -> pd.DataFrame:
    """bbq_frame() with a second group pair in Age, so Age has BBQ SEAT sets (Religion keeps too few strings)."""
    df = bbq_frame()
    age = df[df.category == "Age"]
    more = age.copy()
    for col in ("ans0", "ans1", "context"):
        more[col] = more[col].str.replace("old man", "old woman").str.replace("young man", "young woman")
    more["question"] = more["question"] + " again"
    return pd.concat([df, more], ignore_index=True)


def unit_vectors(df: pd.DataFrame, question_vector, dim: int = 64, seed: int = 0) -> dict[str, np.ndarray]:
    """A unit vector per SEAT text, question and context: random for texts, ``question_vector(row, ctx_vec)``
    for questions."""
    rng = np.random.default_rng(seed)
    unit = lambda v: (v / np.linalg.norm(v)).astype(np.float32)  # noqa: E731
    table = {}
    texts = [t for s in bbq_seat.seat_sets(df[df.category == "Age"]) for t in s.texts()] + list(df["context"])
    for t in dict.fromkeys(texts):
        table[t] = unit(rng.normal(size=dim))
    for _, row in df.iterrows():
        table.setdefault(row["question"], unit(question_vector(row, table)))
    return table


def decision_card(table, df):
    from biaslab.ragfair import cards

    enc = Lookup(lambda t: table[t])
    dec = extrinsic.category_decisions(enc, df, "own_context")
    ext = extrinsic.extrinsic_bias(dec)
    return cards.Card({m: float(ext[m].mean()) for m in ("spd", "eod", "acc_at_1")}, pd.DataFrame(), dec)


def test_perturbation_sigma_gives_the_asked_cosine():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4000, 384))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    for cos in (0.99998, 0.999, 0.9):
        w = v + perturb.perturbation_sigma(cos, 384) * rng.normal(size=v.shape)
        got = np.mean((v * w).sum(1) / np.linalg.norm(w, axis=1))
        assert got == pytest.approx(cos, abs=(1 - cos) * 0.05)
    with pytest.raises(ValueError, match="cosine"):
        perturb.perturbation_sigma(1.0, 384)


def test_perturbation_keeps_clear_decisions_and_flips_near_ties():
    df = seat_ready_frame()
    contexts = {cat: list(dict.fromkeys(g["context"])) for cat, g in df.groupby("category")}
    # clear: each question points straight at the first context of its category (cosine 1 against ≈ 0)
    clear = unit_vectors(df, lambda row, t: t[contexts[row["category"]][0]])
    # tied: each question sits exactly between two contexts with different answers for it
    tied = unit_vectors(df, lambda row, t: t[contexts[row["category"]][0]] + t[contexts[row["category"]][-1]])
    card_of = {"clear": decision_card(clear, df), "tied": decision_card(tied, df)}
    frames, stab = perturb.perturbation_check(card_of, df, {"clear": clear, "tied": tied}, rounds=8,
                                                 cosine=0.99998, seed=0, acc_at_1="own_context")
    assert len(frames) == 8
    by = stab.set_index("checkpoint")
    assert by.at["clear", "decisions_changed"] == 0
    assert by.at["clear", "spd_min"] == by.at["clear", "spd_max"] == pytest.approx(by.at["clear", "spd"])
    assert by.at["tied", "decisions_changed"] > 0.1  # a tie breaks either way under noise of 1e-5 cosine
    assert by.at["tied", "spd_max"] > by.at["tied", "spd_min"]
    intr, extr = frames[0]
    assert set(intr["category"]) == {"Age"}  # Religion has too few strings for SEAT sets: no intrinsic value
    clear_ext = extr[extr.checkpoint == "clear"].set_index("category")
    for cat, (gold, pred, _) in card_of["clear"].decisions.items():
        assert clear_ext.at[cat, "spd"] == pytest.approx(extrinsic.parity_metrics(gold, pred)["spd"])
    # the same seed gives the same re-measurements; no rounds gives none
    again, stab2 = perturb.perturbation_check(card_of, df, {"clear": clear, "tied": tied}, rounds=8,
                                                 cosine=0.99998, seed=0, acc_at_1="own_context")
    pd.testing.assert_frame_equal(stab, stab2)
    pd.testing.assert_frame_equal(frames[-1][1], again[-1][1])
    none, stab0 = perturb.perturbation_check(card_of, df, {"clear": clear, "tied": tied}, rounds=0,
                                                cosine=0.99998, seed=0, acc_at_1="own_context")
    assert none == [] and stab0["decisions_changed"].isna().all()
    assert (stab0["spd_min"] == stab0["spd"]).all()


def test_correlation_claims_use_fishers_z_and_are_judged_against_the_papers_range():
    import math

    import scipy.stats

    from biaslab import claims as cl
    from biaslab.ragfair import findings

    def rows(r, n=11):
        c = {"pearson_r": r, "checkpoints": n}
        pending = findings.claims({}, {"spd": c, "eod": c}, None, None, acc_drop_bound=2.0, rounds=100, seed=0)
        return cl.finalize(pending, level=0.95)

    first = rows(0.78)[0]
    assert first.claim.startswith("‖SEAT‖ correlates positively with ‖SPD‖")
    assert first.our_value == pytest.approx(math.atanh(0.78)) and first.paper_effect == pytest.approx(math.atanh(0.54))
    # z ± t(n − 1)/√(n − 3) at Holm's level: both rows' p are equal, so the first is tested at α/2
    half = scipy.stats.t.ppf(1 - 0.05 / 4, 10) / math.sqrt(8)
    assert (first.ci_low, first.ci_high) == pytest.approx((math.atanh(0.78) - half, math.atanh(0.78) + half))
    assert first.verdict == "reproduced" and first.n == 11
    assert rows(0.1)[0].verdict in ("underpowered", "ruled_out")
    assert rows(-0.95)[0].verdict == "contradicted"
    nan = rows(float("nan"))[0]
    assert nan.n == 0 and math.isnan(nan.ci_low)
    # Spearman's ρ gets the wider standard error √(1.06 / (n − 3))
    assert findings.fisher_z(0.5, 9, spearman=True).sd == pytest.approx(math.sqrt(1.06 / 6) * 3)


def test_bbq_seat_sets_take_groups_and_questions_from_rows():
    df = pd.concat([bbq_frame()] * 1, ignore_index=True)
    df = df[df.category == "Age"]
    with pytest.raises(ValueError, match="too few distinct strings"):
        bbq_seat.seat_sets(df)
    more = df.copy()
    more["ans0"] = more["ans0"].str.replace("old man", "old woman").str.replace("young man", "young woman")
    more["ans1"] = more["ans1"].str.replace("old man", "old woman").str.replace("young man", "young woman")
    more["question"] = more["question"] + " again"
    s = bbq_seat.seat_sets(pd.concat([df, more]))[0]
    assert s.X == ["The old man", "The old woman"] and s.Y == ["The young man", "The young woman"]
    assert all("forgot" in a for a in s.A) and all("remembered" in b for b in s.B)


def test_pairs_come_from_counterfactual_twins_and_train_templates_only():
    df = bbq_frame()
    p = pairs.bbq_pairs(df)
    assert len(p) == 4  # 2 templates × 2 questions
    r = p[(p.category == "Age") & (p.polarity == "neg")].iloc[0]
    assert r.biased_stereotyped.endswith("The old man forgot the keys.")
    assert r.biased_non_stereotyped.endswith("The young man forgot the keys.")
    assert "forgot" not in r.passage
    one = df.assign(category="Age")
    split = pairs.split_templates(one, 0.5, seed=0)
    assert set(split) == {"train", "eval"}
    assert split.groupby(one["question_index"]).nunique().eq(1).all()  # whole templates
    with pytest.raises(ValueError, match=r"Age has 1 template\(s\)"):
        pairs.split_templates(df, 0.5, seed=0)


def test_sample_keeps_counterfactual_groups_whole():
    df = bbq_frame()
    s = bbq_build.sample(df, 8, seed=0)
    assert s.groupby("category").size().tolist() == [8, 8]
    assert len(bbq_build.sample(df, 0, seed=0)) == len(df)


def test_nt_xent_equals_mnrl_cross_entropy_and_fairness_gap():
    torch.manual_seed(0)
    q, p, a, b = (torch.randn(4, 6) for _ in range(4))
    tau = 0.05
    qn, pn = torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(p, dim=-1)
    sims = qn @ pn.T / tau
    direct = -(sims.diag() - torch.logsumexp(sims, dim=1)).mean()
    assert losses.nt_xent(q, p, tau).item() == pytest.approx(direct.item(), rel=1e-5)
    sa = torch.nn.functional.cosine_similarity(q, a, dim=-1)
    sb = torch.nn.functional.cosine_similarity(q, b, dim=-1)
    assert losses.fairness_gap(q, a, b, "squared").item() == pytest.approx(((sa - sb) ** 2).mean().item(), rel=1e-6)
    assert losses.fairness_gap(q, a, b, "mean_gap").item() == pytest.approx(abs(sa.mean() - sb.mean()).item(),
                                                                           rel=1e-6)
    assert losses.fairness_gap(q, a, a, "squared").item() == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="squared or mean_gap"):
        losses.fairness_gap(q, a, b, "other")


def recipe(**over):
    """A debiasing recipe with ragfair.train's values from params.yaml, ``over`` replacing some."""
    from biaslab.ragfair import debias

    T = PARAMS.ragfair.train
    base = {"lora": False, "wiseft": False, "alpha": 1.0, "beta": T.beta, "tau": T.tau, "fair_variant": T.fair_variant,
            "lora_r": T.lora_r, "lora_alpha": T.lora_alpha, "lora_dropout": T.lora_dropout,
            "lora_targets": tuple(T.lora_targets), "wiseft_layers": T.wiseft_layers, "wiseft_lambda": T.wiseft_lambda}
    return debias.MethodConfig(**(base | over))


@pytest.fixture
def fresh_minilm():
    from biaslab.models import load_sentence_transformer

    return load_sentence_transformer(model_dir("minilm"), "cpu")


def test_lora_prepare_trains_only_adapters_and_delta_w_is_exact(fresh_minilm):
    from biaslab.ragfair import debias

    cfg = recipe(lora=True, lora_r=2, lora_alpha=4)
    n = debias.prepare(fresh_minilm, cfg)
    hf = debias.transformer(fresh_minilm)
    names = [k for k, p in hf.named_parameters() if p.requires_grad]
    assert names and all("lora_" in k for k in names)
    assert n == sum(p.numel() for p in hf.parameters() if p.requires_grad)
    dw = debias.DeltaW(hf)
    assert float(dw().detach()) == 0.0  # B starts at zero
    mod = dw.lora_modules[0]
    with torch.no_grad():
        mod.lora_B["default"].weight.fill_(0.5)
    a, b = mod.lora_A["default"].weight, mod.lora_B["default"].weight
    assert float(dw().detach()) == pytest.approx(float((mod.scaling["default"] * (b @ a)).pow(2).sum().detach()), rel=1e-5)


def test_wiseft_trains_top_layers_and_interpolates(fresh_minilm):
    from biaslab.ragfair import debias

    cfg = recipe(wiseft=True, wiseft_layers=2, wiseft_lambda=0.25)
    hf = debias.transformer(fresh_minilm)
    base = {k: v.detach().clone() for k, v in hf.state_dict().items()}
    debias.prepare(fresh_minilm, cfg)
    trainable = {k for k, p in hf.named_parameters() if p.requires_grad}
    assert trainable and all(k.startswith(("encoder.layer.4.", "encoder.layer.5.")) for k in trainable)
    key = "encoder.layer.5.output.dense.weight"
    with torch.no_grad():
        hf.state_dict()[key].add_(1.0)
    debias.finalize(fresh_minilm, base, cfg)
    after = debias.transformer(fresh_minilm).state_dict()
    torch.testing.assert_close(after[key], base[key] + 0.25)
    torch.testing.assert_close(after["encoder.layer.0.output.dense.weight"], base["encoder.layer.0.output.dense.weight"])
    with pytest.raises(ValueError, match="wiseft_layers must be in 1..6"):
        debias.prepare(fresh_minilm, recipe(wiseft=True, wiseft_layers=9))


def test_head_mask_in_weights_equals_the_mask_gradient_hook(fresh_minilm):
    """Zeroing W^O columns must give the same encoder as the m = 0 mask the importance is differentiated at."""
    from biaslab.ragfair import debias

    texts = ["The grandfather forgot.", "The grandson remembered.", "Who forgot?", "Who remembered?"]
    sets = [bbq_seat.BBQSeatSets("Age", [*texts[:1], "The old man."], [*texts[1:2], "The young man."],
                                 [*texts[2:3], "Who was confused?"], [*texts[3:], "Who was sharp?"])]
    imp = debias.head_importance(fresh_minilm, sets, batch_size=64)
    assert imp.shape == (6, 12) and np.isfinite(imp).all() and np.abs(imp).sum() > 0
    heads = debias.heads_to_mask(imp, 0.1)
    assert 0 < len(heads) <= 7 and all(imp[h] > 0 for h in heads)
    assert heads == sorted(heads, key=lambda h: -imp[h])
    hf = debias.transformer(fresh_minilm)
    n_heads, dh = 12, 32
    zero = {h for h in heads}

    def pre(layer):
        def hook(module, args):
            (x,) = args
            m = torch.tensor([0.0 if (layer, j) in zero else 1.0 for j in range(n_heads)])
            return (x.view(*x.shape[:-1], n_heads, dh) * m.view(n_heads, 1)).view(x.shape),
        return hook

    hooks = [lyr.attention.output.dense.register_forward_pre_hook(pre(i)) for i, lyr in enumerate(hf.encoder.layer)]
    hooked = fresh_minilm.encode(texts, convert_to_numpy=True)
    for h in hooks:
        h.remove()
    debias.apply_head_mask(fresh_minilm, heads)
    np.testing.assert_allclose(fresh_minilm.encode(texts, convert_to_numpy=True), hooked, atol=1e-5)


def test_app61_grid_has_the_papers_272_runs_and_the_committed_config_matches(tmp_path):
    import yaml

    from biaslab import config, overrides
    from biaslab.ragfair import debias

    from conftest import REPO

    grid = debias.app61_grid()
    assert len(grid) == 272 and all("." not in k for k in grid)
    committed = yaml.safe_load((REPO / "configs/ragfair-app61-grid.yaml").read_text())["ragfair"]["train"]["runs"]
    assert {k: v for k, v in committed.items() if k in grid} == grid
    target = tmp_path / "params.yaml"
    target.write_text((REPO / "params.yaml").read_text())
    overrides.apply_overrides(REPO / "configs/paper-scale.yaml", target)
    overrides.apply_overrides(REPO / "configs/ragfair-app61-grid.yaml", target)
    p = config.load_params(target)
    assert len(p.ragfair.train.runs) == 279 and len(p.ragfair.evaluate.checkpoints) == 11 and p.ragfair.evaluate.include_all_runs
    cfg = debias.method_config(p.ragfair.train, "lora-r16a32_wise-l3m0p75_alpha1p0_beta0p0001_tau0p07")
    assert (cfg.lora, cfg.wiseft, cfg.lora_r, cfg.lora_alpha, cfg.wiseft_layers, cfg.wiseft_lambda, cfg.tau,
            cfg.beta, cfg.alpha) == (True, True, 16, 32, 3, 0.75, 0.07, 1e-4, 1.0)
    assert debias.method_config(p.ragfair.train, "lora").lora_r == 8  # inherited from ragfair.train


# ------------------------------------------------- why Table 2 rows came out identical (findings issue, item 1)
def train_args(**over):
    return {"epochs": 1, "batch_size": 8, "learning_rate": 1e-4, "warmup_ratio": 0.0, "max_grad_norm": 1.0, "seed": 0,
            "device": "cpu", "max_seq_length": 32, "record": {}, "probe_batches": 0} | over


def state(folder):
    from safetensors.torch import load_file

    return load_file(str(next(Path(folder).glob("model.safetensors"))))


@pytest.mark.slow
def test_the_fairness_term_has_a_gradient_and_alpha_changes_the_checkpoint(tmp_path, fresh_minilm):
    """α = 0 and α > 0 must train different weights: the fairness term is not detached or zeroed. It is, however,
    small next to NT-Xent at the start of training — the measured reason the α = 0 control and the full framework
    retrieve the same contexts at the CPU default size (reports: findings)."""
    from sentence_transformers.base.losses.merged_forward import embed_columns

    from biaslab.ragfair import debias

    cfg = recipe(wiseft=True, wiseft_layers=2, alpha=1.0)
    debias.prepare(fresh_minilm, cfg)
    batch = ragfair_pairs(8)
    feats = [fresh_minilm.tokenize(batch[c].tolist()) for c in debias.COLUMNS]
    q, p, bs, bn = embed_columns(fresh_minilm, feats)
    params = [x for x in fresh_minilm.parameters() if x.requires_grad]
    g_fair = torch.autograd.grad(losses.fairness_gap(q, bs, bn, cfg.fair_variant), params, retain_graph=True,
                                 allow_unused=True)
    g_nce = torch.autograd.grad(losses.nt_xent(q, p, cfg.tau), params, allow_unused=True)
    norm = lambda gs: float(torch.sqrt(sum((g ** 2).sum() for g in gs if g is not None)))  # noqa: E731
    assert norm(g_fair) > 0  # the fairness term reaches the trainable weights
    assert norm(g_fair) < norm(g_nce)  # ... but is the smaller of the two (measured ratio printed in the report)
    out0, s0 = debias.train(model_dir("minilm"), ragfair_pairs(), tmp_path / "a0", recipe(wiseft=True, alpha=0.0),
                            **train_args())
    out1, s1 = debias.train(model_dir("minilm"), ragfair_pairs(), tmp_path / "a1", recipe(wiseft=True, alpha=1.0),
                            **train_args(probe_batches=2))
    g = s1["gradients_at_start"]
    assert g["grad_norm_fair"] > 0 and g["alpha_fair_over_nt_xent"] == pytest.approx(
        g["grad_norm_alpha_fair"] / g["grad_norm_nt_xent"])
    w0, w1 = state(out0), state(out1)
    diff = max(float((w0[k] - w1[k]).abs().max()) for k in w0)
    assert diff > 0, "alpha = 0 and alpha = 1 trained identical weights: the fairness term does not reach them"
    assert s0["last_terms"]["fair"] > 0 and s1["last_terms"]["fair"] > 0
    # at an exaggerated alpha the term acts on what it targets: L_fair on the training pairs, batch by batch
    _, s1000 = debias.train(model_dir("minilm"), ragfair_pairs(), tmp_path / "a1000", recipe(wiseft=True, alpha=1000.0),
                            **train_args())
    assert len(s0["fair_terms_after"]) == 2 and all(
        a < b for a, b in zip(s1000["fair_terms_after"], s0["fair_terms_after"], strict=True))
    # ... which the pipeline's check reads back from the checkpoints (ragfair.evaluate.acts)
    from biaslab import claims as cl
    from biaslab.embed import Encoder
    from biaslab.ragfair import evaluation, extrinsic

    acts = SimpleNamespace(run="a1000", control="a0")
    common = dict(base_dir=model_dir("minilm"), models_dir=tmp_path, evaluation=bbq_frame(),
                  acc_at_1="answers_question", device="cpu", batch_size=8)
    got = evaluation.acts(acts, {"a1000": SimpleNamespace(alpha=1000.0)}, checkpoints=[], card_of={}, **common)
    fair, moved = cl.finalize(got, level=0.95)
    assert fair.kind == moved.kind == "check" and fair.n == 2 and moved.n == len(bbq_frame())
    assert fair.our_value == pytest.approx(np.mean(s1000["fair_terms_after"]) - np.mean(s0["fair_terms_after"]))
    # the control is also an unmasked checkpoint of the evaluation: its card's decisions are reused, not measured again
    a0 = extrinsic.category_decisions(Encoder(out0, device="cpu", batch_size=8), bbq_frame(), "answers_question")
    checkpoints = [SimpleNamespace(name="ck", run="a0", mask=False), SimpleNamespace(name="masked", run="a0", mask=True)]
    reused = evaluation.acts(acts, {"a1000": SimpleNamespace(alpha=1000.0)}, checkpoints=checkpoints,
                             card_of={"ck": SimpleNamespace(decisions=a0)}, **common)
    assert [(c.our_value, c.n) for c in cl.finalize(reused, level=0.95)] == [(c.our_value, c.n) for c in (fair, moved)]
    assert evaluation.acts(None, {}, checkpoints=[], card_of={}, base_dir=None, models_dir=tmp_path, evaluation=None,
                           acc_at_1="", device="cpu", batch_size=8) == []


def test_a_lora_run_merges_changed_weights_into_a_plain_checkpoint(tmp_path):
    from biaslab.ragfair import debias

    out, summary = debias.train(model_dir("minilm"), ragfair_pairs(), tmp_path / "lora", recipe(lora=True),
                                **train_args(learning_rate=1e-3))
    trained, base = state(out), state(model_dir("minilm"))
    assert not any("lora_" in k for k in trained)  # merged: a plain checkpoint
    changed = [k for k in base if k in trained and not torch.equal(base[k], trained[k])]
    assert changed and all(any(t in k for t in ("query", "key", "value")) for k in changed)
    assert summary["last_terms"]["delta_w"] > 0


def test_the_bootstrap_measures_all_resamples_at_once_as_parity_metrics_measures_each():
    # ragfair.findings' summary of SPD / EOD / Acc@1 over a [rounds, n] matrix of within-category resamples gives,
    # per row, the mean over categories of SPD / EOD computed row set by row set from the rates' definitions — bit
    # for bit, including a category where one role never occurs (undefined gaps) — and refuses resamples that cross
    # categories
    from biaslab import stats
    from biaslab.ragfair import findings

    rng = np.random.default_rng(0)
    roles = extrinsic.ROLES
    cats = np.repeat(np.array(list("abcd")), [40, 40, 40, 3])
    n = len(cats)
    gold, pred, hit = rng.choice(roles[:2], n), rng.choice(roles, n, p=[0.45, 0.45, 0.1]), rng.random(n) < 0.3
    gold[cats == "d"] = roles[0]
    resamples = stats.resample_indices(n, 200, 1, cats)

    def one_table(g, p):  # eqs. 5-6 on one table, with NumPy means of boolean masks
        r = {}
        for role in roles[:2]:
            y, y_hat = g == role, p == role
            r[role] = (y_hat.mean(), y_hat[y].mean() if y.any() else np.nan, y_hat[~y].mean() if (~y).any() else np.nan)
        (sel_s, tpr_s, fpr_s), (sel_n, tpr_n, fpr_n) = r[roles[0]], r[roles[1]]
        parts = [abs(a - b) for a, b in ((tpr_s, tpr_n), (fpr_s, fpr_n)) if not (np.isnan(a) or np.isnan(b))]
        return {"spd": float(abs(sel_s - sel_n)), "eod": float(np.mean(parts)) if parts else float("nan")}

    for m in ("spd", "eod", "acc_at_1"):
        def by_hand(ix, m=m):
            vals = []
            for c in "abcd":
                sel = ix[cats[ix] == c]
                vals.append(100.0 * float(hit[sel].mean()) if m == "acc_at_1" else one_table(gold[sel], pred[sel])[m])
            return float(np.nanmean(vals))

        fn = findings._measure((cats, gold, pred, hit), m)
        np.testing.assert_array_equal(fn(resamples), [by_hand(ix) for ix in resamples])
        assert fn(np.arange(n)) == by_hand(np.arange(n))
        if m != "acc_at_1":  # and the one-table function the other stages call gives the same bits
            np.testing.assert_array_equal([extrinsic.parity_metrics(gold[ix], pred[ix])[m] for ix in resamples[:20]],
                                          [one_table(gold[ix], pred[ix])[m] for ix in resamples[:20]])
    with pytest.raises(ValueError, match="within categories"):
        fn(np.zeros(n, dtype=int))
