"""The ``fairrank`` section of params.yaml (Seyedsalehi, Zihayat & Bagheri, "A Regularization Framework for Gender
Bias Mitigation in Dense Neural Rankers"). Types and bounds only: every value is written in params.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..config import Section


class FairrankData(Section):
    """§4.2 and what replaces it offline (``biaslab.fairrank.prepare``)."""

    relevance: int = Field(ge=1)  # grade >= this is relevant (TREC DL passages: 2)
    negatives: Literal["judged", "judged+unjudged"]  # non-relevant training passages among the BM25 top-100
    max_pairs: int = Field(ge=0)  # seeded (q, d+, d-) sample spread over the training queries; 0 = all
    toy_triples: bool  # add the 100 MS MARCO training triples
    rerank_depth: int = Field(gt=0, le=100)  # re-rank each evaluation query's BM25 top-k (paper setting: 100)
    # (training year, evaluated year) per fold; the evaluated years' queries are pooled (biaslab.fairrank.prepare)
    folds: list[list[Literal["dl19", "dl20"]]] = Field(min_length=1)

    @field_validator("folds")
    @classmethod
    def _folds(cls, v):
        for fold in v:
            if len(fold) != 2 or fold[0] == fold[1]:
                raise ValueError(f"fairrank.data.folds: {fold} is not a fold; a fold is [training year, evaluated "
                                 "year], two different years, e.g. [dl20, dl19]")
        years = [e for _, e in v]
        if len(set(years)) < len(years):
            raise ValueError(f"fairrank.data.folds evaluate a year twice ({years}): each evaluated year's queries "
                             "are measured once")
        return v


class FairrankTrain(Section):
    """The rankers' training (a dense bi-encoder or the OpenMatch cross-encoder, one epoch, Adam; CPU sizes in
    params.yaml)."""

    family: Literal["bi_encoder", "cross_encoder"]  # biaslab.fairrank.train: the dense ranker or the cross-encoder
    batch_size: int = Field(gt=0)  # pairs (pairwise) or rows (pointwise) per step
    learning_rate: float = Field(gt=0)  # the encoder's trainable layers
    head_learning_rate: float = Field(gt=0)  # the new layers: scoring head, AdvBERT's adversary
    epochs: int = Field(gt=0)
    warmup: float = Field(ge=0)  # < 1: share of the steps, >= 1: steps
    max_length: int = Field(gt=8)  # tokens of a passage (bi-encoder) or of [CLS] query [SEP] passage [SEP]
    # top encoder layers fine-tuned on the frozen bottom's states (a CPU addition; null = all layers, the paper)
    trainable_layers: int | None = Field(gt=0)
    margin: float = Field(gt=0)  # m of the pairwise hinge (eq. 12; the authors' code: 1)
    score_batch_size: int = Field(gt=0)


class FairrankLoss(Section):
    """The authors' code's variants of the regularisers (REFERENCES.md), behind parameters."""

    psi: Literal["signed", "abs"]  # Ψ = mag_f − mag_m (eq. 15) or |Ψ| (the authors' code)
    zeta_pos: Literal["measured", "one"]  # ζ(d+) as measured (eq. 24) or fixed to 1 (the authors' code)
    neutrality_threshold: float = Field(ge=0)  # τ of eq. 22 (the reference code: 1)


class FairrankRanker(Section):
    """One ranker family and its λ values: the base ranker (mode none), a scenario of §3.3 (penalty / reward ×
    relevant / irrelevant / both), a pointwise variant (App. A) or a baseline (``sampling: lws``; ``adv_lambda``
    > 0: AdvBERT). ``reference``: the ranker its percentage changes are computed against (the same objective's
    base ranker)."""

    objective: Literal["pairwise", "pointwise"]
    mode: Literal["none", "penalty", "reward"]
    target: Literal["relevant", "irrelevant", "both"]
    lambdas: list[float]
    reference: str
    sampling: Literal["random", "lws"]
    lws_share: float = Field(ge=0, le=1)  # lws: share of each query's negatives replaced by its most biased ones
    adv_lambda: float = Field(ge=0)  # AdvBERT: weight of the adversary (0 = none)
    adv_hidden: int = Field(ge=0)

    @field_validator("lambdas")
    @classmethod
    def _lambdas(cls, v: list[float]) -> list[float]:
        if not v:
            raise ValueError("list at least one λ (0 for an unregularised ranker)")
        bad = [x for x in v if x < 0]
        if bad:
            raise ValueError(f"λ values {bad} are negative: the penalty / reward weight must be >= 0")
        return v

    @model_validator(mode="after")
    def _check(self):
        if self.mode == "none" and any(x != 0 for x in self.lambdas):
            raise ValueError("a ranker with mode none has no regulariser: its lambdas must be [0.0]")
        if self.adv_lambda and (self.objective != "pairwise" or not self.adv_hidden):
            raise ValueError("AdvBERT (adv_lambda > 0) needs objective pairwise and adv_hidden > 0")
        return self


class FairrankEval(Section):
    cutoffs: list[int]  # ARaB / NFaiRR / gendered-term cut-offs (paper: 10 and 20)
    mrr_cutoff: int = Field(gt=0)
    table_lambda: float = Field(ge=0)  # the λ of each scenario in Tables 1–4
    lambda_figure: str  # the ranker family whose λ sweep Fig. 1 shows (paper: penalty on relevant documents)
    baselines_figure: list[str]  # the rankers Fig. 2 compares (ours and the baselines)

    @field_validator("cutoffs")
    @classmethod
    def _cutoffs(cls, v: list[int]) -> list[int]:
        if not v or any(c <= 0 for c in v):
            raise ValueError("list positive cut-offs (paper: [10, 20])")
        return v


class FairrankClaims(Section):
    """Bounds the claim checks use (``biaslab.fairrank.findings``)."""

    mrr_tolerance: float = Field(gt=0)  # "MRR@10 within small deltas": |ΔMRR@10| below this (absolute)


class Fairrank(Section):
    backbones: list[str]  # logical model names (paper: BERT-mini, ELECTRA-small; Tables 1–2 and 3–4)
    seeds: list[int]  # every ranker trains once per seed (paper: 5)
    data: FairrankData
    train: FairrankTrain
    loss: FairrankLoss
    rankers: dict[str, FairrankRanker]
    eval: FairrankEval
    claims: FairrankClaims

    @model_validator(mode="after")
    def _check(self):
        if not self.seeds:
            raise ValueError("fairrank.seeds is empty: list at least one seed (paper: 5)")
        if not self.backbones:
            raise ValueError("fairrank.backbones is empty: list at least one encoder")
        for name, r in self.rankers.items():
            if "@" in name or "|" in name:
                raise ValueError(f"fairrank.rankers.{name}: ranker names may not contain '@' or '|'")
            if r.reference not in self.rankers:
                raise ValueError(f"fairrank.rankers.{name}.reference = {r.reference!r} is not a ranker "
                                 f"({list(self.rankers)})")
        if max(self.eval.cutoffs) > self.data.rerank_depth:
            raise ValueError(f"fairrank.eval.cutoffs go to {max(self.eval.cutoffs)} but only the BM25 top-"
                             f"{self.data.rerank_depth} is re-ranked: raise fairrank.data.rerank_depth")
        unknown = [n for n in [self.eval.lambda_figure, *self.eval.baselines_figure] if n not in self.rankers]
        if unknown:
            raise ValueError(f"fairrank.eval names rankers {unknown} that fairrank.rankers does not define")
        return self


SECTION = Fairrank
