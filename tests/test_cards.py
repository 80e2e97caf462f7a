"""Cross-paper bias cards: rows, references, bias changes and the ranking, on hand-made tables."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from biaslab import stats
from biaslab.cards import changes, measure
from biaslab.cards import load as card_load
from biaslab.ragfair import perturb

BOOT = {"rounds": 200, "confidence": 0.95, "seed": 0,  # common.uncertainty / common.seed of the tests
        "test_rounds": 999, "p_adjust": "bh"}  # cards.permutation_rounds / cards.p_adjust


def _cards() -> pd.DataFrame:
    rows = [
        {"checkpoint": "base/minilm", "paper": "base", "kind": "encoder", "spd": -0.10, "seat_fairness": 0.6,
         "acc_at_1": 20.0, "rank:NFaiRR@10": 0.90},
        {"checkpoint": "ragfair/lora", "paper": "ragfair", "kind": "encoder", "spd": 0.05, "seat_fairness": 0.7,
         "acc_at_1": 18.0, "rank:NFaiRR@10": 0.85},
        {"checkpoint": "intersect/x", "paper": "intersect", "kind": "encoder", "spd": -0.20, "seat_fairness": 0.6,
         "acc_at_1": 21.0, "rank:NFaiRR@10": 0.95},
        {"checkpoint": "fairrank/bm25", "paper": "fairrank", "kind": "ranker", "rank:NFaiRR@10": 0.99},
        {"checkpoint": "fairrank/minilm|base@0", "paper": "fairrank", "kind": "ranker", "rank:NFaiRR@10": 0.97},
        {"checkpoint": "fairrank/minilm|lws@0", "paper": "fairrank", "kind": "ranker", "rank:NFaiRR@10": 0.98},
        {"checkpoint": "cscl/t/ce", "paper": "cscl", "kind": "classifier", "eo_gap": 0.30, "macro_f1": 0.6},
        {"checkpoint": "cscl/t/two_stage@5", "paper": "cscl", "kind": "classifier", "eo_gap": 0.10, "macro_f1": 0.5},
    ]
    return pd.DataFrame(rows)


def test_bias_change_reads_each_measure_in_its_own_direction_against_the_rows_reference():
    ch = changes.bias_change(_cards(), "minilm", None, **BOOT).set_index(["checkpoint", "measure"])["bias_change"]
    assert ch[("ragfair/lora", "spd")] == pytest.approx(0.05 - 0.10)  # |0.05| < |-0.10|: less biased
    assert ch[("intersect/x", "spd")] == pytest.approx(0.10)  # |-0.20| > |-0.10|: more biased
    assert ch[("ragfair/lora", "seat_fairness")] == pytest.approx(-0.1)  # higher fairness score = less biased
    assert ch[("ragfair/lora", "rank:NFaiRR@10")] == pytest.approx(0.05)  # lower NFaiRR = more biased
    assert ch[("fairrank/minilm|lws@0", "rank:NFaiRR@10")] == pytest.approx(-0.01)  # vs the base ranker
    assert ch[("cscl/t/two_stage@5", "eo_gap")] == pytest.approx(-0.2)  # vs CE on the same task
    measures = set(ch.index.get_level_values("measure"))
    assert "acc_at_1" not in measures and "macro_f1" not in measures  # utility is never a bias change
    names = set(ch.index.get_level_values("checkpoint"))
    assert not {"base/minilm", "fairrank/bm25", "fairrank/minilm|base@0", "cscl/t/ce"} & names  # references


def test_moved_lists_only_reductions_largest_first_and_the_heatmap_scales_each_column():
    ch = changes.bias_change(_cards(), "minilm", None, **BOOT)
    top = changes.moved(ch, 1)
    assert (top["bias_change"] < 0).all()
    assert top.set_index("measure")["checkpoint"].to_dict() == {
        "eo_gap": "cscl/t/two_stage@5", "rank:NFaiRR@10": "intersect/x", "seat_fairness": "ragfair/lora",
        "spd": "ragfair/lora"}
    grid = changes.heatmap_frame(ch)
    assert np.nanmax(grid.abs().to_numpy()) == pytest.approx(1.0)
    assert grid.loc["intersect/x", "spd"] == pytest.approx(1.0) and grid.loc["ragfair/lora", "spd"] == pytest.approx(-0.5)


def test_a_change_inside_both_noise_bands_is_not_a_movement():
    cards = _cards()
    bands = {"base/minilm": (-0.13, -0.07), "ragfair/lora": (0.02, 0.06), "intersect/x": (-0.25, -0.15)}
    for name, (lo, hi) in bands.items():
        cards.loc[cards.checkpoint == name, ["spd_min", "spd_max"]] = [lo, hi]
    ch = changes.bias_change(cards, "minilm", None, **BOOT).set_index(["checkpoint", "measure"])
    assert ch.at[("ragfair/lora", "spd"), "beyond_noise"] is True  # |SPD| bands [0.02, 0.06] and [0.07, 0.13]
    assert ch.at[("ragfair/lora", "seat_fairness"), "beyond_noise"] is None  # no band for this measure
    assert "spd_min" not in set(ch.index.get_level_values("measure"))  # a band is not a bias measure
    cards.loc[cards.checkpoint == "ragfair/lora", ["spd", "spd_min", "spd_max"]] = [0.09, 0.06, 0.12]
    ch = changes.bias_change(cards, "minilm", None, **BOOT)
    lora = ch[(ch.checkpoint == "ragfair/lora") & (ch.measure == "spd")].iloc[0]
    assert lora["bias_change"] < 0 and lora["beyond_noise"] is False  # |0.09| < |-0.10|, but the bands overlap
    top = changes.moved(ch, 3)
    assert "spd" not in set(top["measure"])  # the only SPD reduction is noise
    grid = changes.heatmap_frame(ch)
    assert changes.unresolved_cells(ch, grid) == [(list(grid.index).index("ragfair/lora"),
                                                     list(grid.columns).index("spd"))]
    assert "seat_fairness" in set(top["measure"])  # measures without a band are ranked as before
    cards.loc[cards.checkpoint == "base/minilm", ["spd_min", "spd_max"]] = [-0.02, 0.03]  # spans 0: |SPD| 0-0.03
    assert changes.bias_change(cards, "minilm", None, **BOOT).set_index(["checkpoint", "measure"]).at[
        ("ragfair/lora", "spd"), "beyond_noise"] is True


def test_the_noise_band_is_the_range_of_the_perturbed_re_measurements():
    from test_ragfair_lib import Lookup, decision_card, seat_ready_frame, unit_vectors

    df = seat_ready_frame()
    ctx = {cat: list(dict.fromkeys(g["context"])) for cat, g in df.groupby("category")}
    tied = unit_vectors(df, lambda row, t: t[ctx[row["category"]][0]] + t[ctx[row["category"]][-1]])
    enc = Lookup(lambda t: tied[t])
    card = decision_card(tied, df)
    probes = measure.Probes(bbq_rows=df, seat_tests=[], card_args={}, embedder_tasks={}, rank_lists=pd.DataFrame(),
                            rank_args={}, rank_measures=[], perturbation={"rounds": 8, "cosine": 0.99998, "seed": 0,
                                                                      "acc_at_1": "own_context"})
    band = measure.noise_band(enc, "tied", card, probes)
    assert band["spd_min"] < band["spd_max"]  # exact ties flip under noise
    vectors = {t: tied[t] for t in perturb.probe_texts(df)}  # in the order the card encodes them
    _, stab = perturb.perturbation_check({"tied": card}, df, {"tied": vectors}, rounds=8, cosine=0.99998, seed=0,
                                         acc_at_1="own_context")
    assert band == {c: pytest.approx(stab.iloc[0][c]) for c in measure.NOISE_BANDS}  # ragfair's check, its knobs
    no_rounds = dataclasses.replace(probes, perturbation={"rounds": 0, "cosine": 0.99998, "seed": 0,
                                                                   "acc_at_1": "own_context"})
    assert measure.noise_band(enc, "tied", card, no_rounds) == {}


def test_a_missing_reference_row_is_named():
    cards = _cards()
    with pytest.raises(ValueError, match=r"base/gte"):
        changes.bias_change(cards, "gte", None, **BOOT)


NO_UNITS = pd.DataFrame(columns=["measure", "unit", "value"])


def _card(summary, units=NO_UNITS) -> measure.Card:
    return measure.Card(summary, units)


def test_one_card_against_another_reads_as_the_stage_reads_a_checkpoint_against_its_base():
    ref = _card({"spd": -0.10, "spd_min": -0.13, "spd_max": -0.07, "seat_fairness": 0.6, "acc_at_1": 20.0})
    mine = _card({"spd": 0.05, "spd_min": 0.02, "spd_max": 0.06, "seat_fairness": 0.7, "acc_at_1": 18.0})
    ch = changes.compare(mine, "my/model", ref, "minilm", **BOOT).set_index("measure")
    assert set(ch.index) == {"spd", "seat_fairness"}  # utility and the band columns are not bias measures
    assert ch.at["spd", "bias_change"] == pytest.approx(-0.05) and ch.at["spd", "beyond_noise"] is True
    assert ch.at["seat_fairness", "bias_change"] == pytest.approx(-0.1) and ch.at["seat_fairness", "beyond_noise"] is None
    assert ch.at["spd", "reference_value"] == -0.10 and (ch["checkpoint"] == "my/model").all()
    cards = _cards().assign(spd_min=np.nan, spd_max=np.nan)
    lora = cards[cards.checkpoint == "ragfair/lora"].iloc[0].dropna().drop(["checkpoint", "paper", "kind"]).to_dict()
    base = cards[cards.checkpoint == "base/minilm"].iloc[0].dropna().drop(["checkpoint", "paper", "kind"]).to_dict()
    stage = changes.bias_change(cards, "minilm", None, **BOOT)
    stage = stage[stage.checkpoint == "ragfair/lora"].set_index("measure")["bias_change"]
    assert changes.compare(_card(lora), "ragfair/lora", _card(base), "minilm", **BOOT).set_index("measure")[
        "bias_change"].to_dict() == pytest.approx(stage.to_dict())  # the same reading as the cards stage's
    with pytest.raises(ValueError, match="itself"):
        changes.compare(mine, "minilm", ref, "minilm", **BOOT)


def _units(name, measure_, values, units=None):
    units = units if units is not None else [str(i) for i in range(len(values))]
    return pd.DataFrame({"checkpoint": name, "measure": measure_, "unit": units, "value": values})


def test_a_mean_over_units_gets_a_paired_interval_and_an_unresolved_change_is_not_a_movement():
    rng = np.random.default_rng(0)
    base = rng.normal(0.0, 1.0, 40)
    cards = pd.DataFrame([
        {"checkpoint": "base/minilm", "paper": "base", "kind": "encoder", "rank:NFaiRR@10": base.mean(),
         "embedder_bias[G]": -40.0},
        {"checkpoint": "ragfair/lora", "paper": "ragfair", "kind": "encoder", "rank:NFaiRR@10": (base + 0.5).mean(),
         "embedder_bias[G]": -30.0},  # every query's NFaiRR up by 0.5: a clear reduction of bias
        {"checkpoint": "intersect/x", "paper": "intersect", "kind": "encoder", "rank:NFaiRR@10": (base + 1e-3).mean(),
         "embedder_bias[G]": -39.0}])
    noise = rng.normal(0.0, 1.0, 40)
    side = np.where(np.arange(10) < 3, 100.0, np.where(np.arange(10) < 7, -100.0, 0.0))  # mean -10
    units = pd.concat([
        _units("base/minilm", "rank:NFaiRR@10", base), _units("ragfair/lora", "rank:NFaiRR@10", base + 0.5),
        _units("intersect/x", "rank:NFaiRR@10", base + 1e-3 * noise / noise.std()),
        _units("base/minilm", "embedder_bias[G]", np.roll(side, 1)), _units("ragfair/lora", "embedder_bias[G]", side),
        _units("intersect/x", "embedder_bias[G]", side, units=list("abcdefghij"))])  # other units: not paired
    ch = changes.bias_change(cards, "minilm", units, **BOOT).set_index(["checkpoint", "measure"])
    lora = ch.loc[("ragfair/lora", "rank:NFaiRR@10")]
    assert lora["bias_change"] == pytest.approx(-0.5) and lora["ci_low"] == pytest.approx(-0.5)
    assert lora["ci_high"] == pytest.approx(-0.5)  # a shift every query shares: no spread
    assert lora["p_value"] == pytest.approx(2 / 1000) and lora["significant"]  # the smallest p 999 swaps can give
    x = ch.loc[("intersect/x", "rank:NFaiRR@10")]
    assert x["ci_low"] < 0 < x["ci_high"] and x["p_value"] > 0.05  # noise around 1e-3: not resolved
    g = ch.loc[("ragfair/lora", "embedder_bias[G]")]  # |mean| of per-question sides, paired by question
    assert g["ci_low"] <= g["bias_change"] <= g["ci_high"] and np.isfinite(g["p_value"])
    assert np.isnan(ch.loc[("intersect/x", "embedder_bias[G]"), "ci_low"])  # different questions: no interval
    no_rounds = changes.bias_change(cards, "minilm", units, **(BOOT | {"rounds": 0}))
    assert no_rounds["ci_low"].isna().all()  # rounds 0: point estimates, as without units
    top = changes.moved(ch.reset_index(), 5)
    listed = set(zip(top["checkpoint"], top["measure"], strict=True))
    assert ("ragfair/lora", "rank:NFaiRR@10") in listed
    assert ("intersect/x", "rank:NFaiRR@10") not in listed  # its interval spans 0
    assert ("intersect/x", "embedder_bias[G]") in listed  # no interval (other questions): a point estimate, kept


def test_the_tables_tests_are_adjusted_as_one_family_and_a_nominal_reduction_is_not_a_movement():
    base = np.random.default_rng(1).normal(0.0, 1.0, 40)
    weak = np.where(np.arange(40) < 28, 0.1, -0.1)  # 28 of 40 queries up: sign-flip p ~ 0.017, interval above 0
    null = np.where(np.arange(40) < 20, 0.1, -0.1)  # as many up as down: no change
    shifts = {"base/minilm": 0.0, "ragfair/strong": 0.5, "ragfair/weak": weak,
              **{f"intersect/null{i}": np.roll(null, i) for i in range(30)}}
    cards = pd.DataFrame([{"checkpoint": n, "paper": n.split("/")[0], "kind": "encoder",
                           "rank:NFaiRR@10": float(np.mean(base + d))} for n, d in shifts.items()])
    units = pd.concat([_units(n, "rank:NFaiRR@10", base + d) for n, d in shifts.items()])
    ch = changes.bias_change(cards, "minilm", units, **(BOOT | {"test_rounds": 9999})).set_index("checkpoint")
    assert ch["q_value"].to_numpy() == pytest.approx(stats.adjust_p(ch["p_value"], "bh"))  # 32 tests, one family
    assert (ch["significant"] == (ch["q_value"] <= 0.05)).all()
    w = ch.loc["ragfair/weak"]
    assert w["bias_change"] < 0 and w["ci_high"] < 0 and w["p_value"] < 0.05  # resolved, taken alone
    assert w["q_value"] > 0.05 and not w["significant"]  # ... but not among 32 tests
    assert ch.loc["ragfair/strong", "significant"]
    assert changes.moved(ch.reset_index(), 5)["checkpoint"].tolist() == ["ragfair/strong"]
    unadjusted = changes.bias_change(cards, "minilm", units, **(BOOT | {"test_rounds": 9999, "p_adjust": "none"}))
    assert set(changes.moved(unadjusted, 5)["checkpoint"]) == {"ragfair/strong", "ragfair/weak"}


def test_checkpoint_cards_load_one_encoder_at_a_time_and_tag_its_units(monkeypatch):
    loaded = []
    monkeypatch.setattr(measure, "encoder_card", lambda enc, name, probes: _card(
        {"spd": float(len(name))}, pd.DataFrame({"measure": ["m"], "unit": ["q1"], "value": [enc]})))
    cks = [measure.Checkpoint(f"p/{i}", "p", "encoder", f"src{i}", "none") for i in range(3)]
    rows, units = measure.checkpoint_cards(cks, probes=None, load=lambda src: loaded.append(src) or len(loaded))
    assert loaded == ["src0", "src1", "src2"] and [ck for ck, _ in rows] == cks
    assert [u["checkpoint"].iloc[0] for u in units] == ["p/0", "p/1", "p/2"]
    assert [u["value"].iloc[0] for u in units] == [1, 2, 3]


def test_the_heatmap_marks_every_unresolved_change():
    ch = changes.bias_change(_cards(), "minilm", None, **BOOT)
    ch.loc[0, "beyond_noise"] = False  # one change inside its noise band
    fig = changes.heatmap_figure(ch, 0.95)
    marks = [t for t in fig.axes[0].texts if t.get_text() == "≈"]
    assert len(marks) == int(changes.unresolved(ch).sum()) >= 1
    assert "95%" in fig.axes[0].get_title()


def test_rank_units_are_the_per_query_values_rank_means_averages():
    pq = pd.DataFrame({"ranker": ["b"] * 7, "query_set": ["s"] * 5 + ["t"] * 2, "qid": [1, 1, 2, 2, 2, 1, 3],
                       "measure": ["M", "M", "M", "M", "N", "M", "M"], "value": [0.2, 0.4, 1.0, 0.8, 5.0, 9.0, 9.0]})
    units = measure.ranker_units(pq, "s", ["M"])  # two seeds per query
    assert units.columns.tolist() == measure.UNIT_COLUMNS
    assert units.set_index("unit")["value"].to_dict() == pytest.approx({"1": 0.3, "2": 0.9})  # seeds averaged
    assert (units["checkpoint"] == "fairrank/b").all() and (units["measure"] == "rank:M").all()
    assert units["value"].mean() == pytest.approx(measure.rank_means(pq, "s", ["M"]).iloc[0]["rank:M"])


def test_classifier_and_ranker_rows_average_over_seeds_and_queries():
    methods = pd.DataFrame({"task": "t", "method": ["ce", "ce", "two_stage", "two_stage"],
                            "value": [np.nan, np.nan, 5.0, 5.0], "seed": [0, 1, 0, 1],
                            "eo_gap": [0.2, 0.4, 0.1, 0.3], "macro_f1": [0.5, 0.7, 0.6, 0.6]})
    rows = measure.classifier_rows(methods).set_index("checkpoint")
    assert rows.loc["cscl/t/ce", "eo_gap"] == pytest.approx(0.3)
    assert rows.loc["cscl/t/two_stage@5", "eo_gap"] == pytest.approx(0.2)
    assert (rows["kind"] == "classifier").all() and rows["not_measured"].str.contains("not models").all()
    pq = pd.DataFrame({"ranker": ["bm25"] * 4, "query_set": ["dl19_fair"] * 2 + ["trecdl"] * 2,
                       "qid": ["1", "2", "1", "3"], "measure": "NFaiRR@10", "value": [0.8, 1.0, 0.0, 0.0]})
    r = measure.ranker_rows(pq, "dl19_fair", ["NFaiRR@10"]).set_index("checkpoint")
    assert r.loc["fairrank/bm25", "rank:NFaiRR@10"] == pytest.approx(0.9)
    with pytest.raises(ValueError, match="ARaB-tc@10"):
        measure.ranker_rows(pq, "dl19_fair", ["ARaB-tc@10"])


class _Enc:
    """A fake encoder: a text's vector is its letter counts of 'a' and 'b'."""

    def __init__(self):
        self.calls = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.array([[t.count("a"), t.count("b")] for t in texts], dtype=float)


def test_a_biencoder_run_scores_cosine_and_encodes_each_text_once():
    lists = pd.DataFrame({"qid": ["1", "1", "2"], "query": ["aa", "aa", "bb"], "docid": ["x", "y", "x"],
                          "text": ["a", "ab", "a"]})
    enc = _Enc()
    run = measure.biencoder_run(enc, lists, "m")
    assert run["score"].tolist() == pytest.approx([1.0, 2 ** -0.5, 0.0])
    assert [len(c) for c in enc.calls] == [2, 2]  # two distinct queries, two distinct passages
    assert set(run.columns) == {"ranker", "seed", "qid", "docid", "score"}


def test_rank_lists_name_a_passage_without_text():
    lists = pd.DataFrame({"qid": ["1"], "query": ["q"], "docid": ["d9"]})
    with pytest.raises(ValueError, match="d9"):
        measure.rank_lists(lists, pd.DataFrame({"docid": ["d1"], "text": ["t"]}))


def test_encoder_checkpoints_are_the_base_models_and_every_trained_run(tmp_path):
    (tmp_path / "data/models/ragfair/lora").mkdir(parents=True)
    (tmp_path / "data/models/ragfair/lora/biaslab_run.json").write_text("{}")
    (tmp_path / "data/models/ragfair/partial").mkdir()  # no record: not a finished checkpoint
    cks = measure.encoder_checkpoints(tmp_path, ["minilm"], ["ragfair"])
    assert [(c.name, c.kind, c.source) for c in cks] == [("base/minilm", "encoder", "minilm"),
                                                         ("ragfair/lora", "encoder", "data/models/ragfair/lora")]
    with pytest.raises(FileNotFoundError, match="intersect"):
        measure.encoder_checkpoints(tmp_path, ["minilm"], ["intersect"])


def test_every_encoder_is_measured_at_one_truncation_whatever_it_was_saved_with(tmp_path, minilm):
    """A checkpoint saved at 96 tokens (as ragcontrol's embedders are) and the base encoder (256) are both loaded
    at ``cards.max_seq_length``; a long passage's vector then equals the base encoder's at that length."""
    from conftest import PARAMS

    folder = tmp_path / "data/models/ragcontrol/run"
    own = minilm.max_seq_length  # the session's shared model: put its length back whatever happens
    minilm.max_seq_length = 96
    try:
        minilm.save(str(folder))
    finally:
        minilm.max_seq_length = own
    assert card_load.load_encoder("data/models/ragcontrol/run", tmp_path, PARAMS.models, device="cpu", batch_size=4,
                                max_seq_length=96).model.max_seq_length == 96  # saved length, for contrast
    saved = card_load.load_encoder("data/models/ragcontrol/run", tmp_path, PARAMS.models, device="cpu", batch_size=4,
                                 max_seq_length=40)
    base = card_load.load_encoder("minilm", tmp_path, PARAMS.models, device="cpu", batch_size=4, max_seq_length=40)
    assert saved.model.max_seq_length == base.model.max_seq_length == 40
    text = ["the engineer explained the design to her colleagues " * 12]  # about 110 tokens
    np.testing.assert_allclose(saved.encode(text), base.encode(text), atol=1e-6)
    assert not np.allclose(base.encode(text), minilm.encode(text, normalize_embeddings=True), atol=1e-3)


def test_a_checkpoint_that_kept_the_bases_bottom_gets_the_same_vectors_through_its_top(tmp_path, minilm,
                                                                                      monkeypatch):
    """After the base encoder, a checkpoint whose embeddings and first layers are the base's (as ragfair's WiSE-FT
    and ragcontrol's last-k runs are) encodes on the base's bottom states — the same vectors as loading it in full
    without a base; a checkpoint that changed its bottom is loaded in full."""
    import copy

    import torch

    from biaslab.embed import Encoder
    from biaslab.frozen import FrozenBottom

    from conftest import PARAMS

    monkeypatch.setattr(card_load, "_BOTTOMS", {})
    kept, changed = copy.deepcopy(minilm), copy.deepcopy(minilm)
    with torch.no_grad():
        kept[0].auto_model.encoder.layer[5].output.dense.bias += 0.05  # the top layer trained
        changed[0].auto_model.encoder.layer[0].output.dense.bias += 0.05  # the bottom layer trained
    kept.save(str(tmp_path / "data/models/ragfair/kept"))
    changed.save(str(tmp_path / "data/models/ragfair/changed"))
    args = {"device": "cpu", "batch_size": 4, "max_seq_length": 40}

    def load(source):
        return card_load.load_encoder(source, tmp_path, PARAMS.models, **args)

    full = load("data/models/ragfair/kept")  # no base loaded yet: in full
    assert type(full) is Encoder
    load("minilm")
    fast = load("data/models/ragfair/kept")
    assert type(fast) is not Encoder and fast.fingerprint == full.fingerprint  # one store entry
    texts = ["the engineer explained the design to her colleagues " * 12, "A short one.", "The nurse was late."]
    fast.cache = full.cache = None  # measure the computation, not the store
    np.testing.assert_array_equal(fast.encode(texts), full.encode(texts))
    assert isinstance(card_load._BOTTOMS[("minilm", "cpu", 4, 40)]._by_depth[5], FrozenBottom)
    load("minilm")
    assert len(card_load._BOTTOMS) == 1  # the base loaded again: its bottoms are kept, not copied
    assert type(load("data/models/ragfair/changed")) is Encoder
