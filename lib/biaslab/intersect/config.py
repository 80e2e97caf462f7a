"""The ``intersect`` section of params.yaml (BiasRetriever, "Beyond single-axis fairness"). Types and bounds only:
every value is written in params.yaml (see ``biaslab.config``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator

from ..config import Section

Corpus = Literal["indic", "western"]


class IntersectReference(Section):
    """§3.1.1: INDI-REFERENCE and SBIC-REFERENCE."""

    indi_n_unbiased: int = Field(ge=0)
    sbic_n_unbiased: int = Field(ge=0)
    # offline only: unbiased SBIC stand-ins must also have mean offensiveness below this
    sbic_unbiased_max_offensive: float = Field(gt=0, le=1)
    # offline only: search the stand-ins among a seeded sample of this many eligible posts; 0 = all
    sbic_neutral_pool: int = Field(ge=0)
    # Table 3 per-label counts of biased SBIC posts (capped by what the dev + test aggregates hold)
    sbic_caps: dict[str, int]


class CorpusParagraphs(Section):
    n_biased: int = Field(gt=0)
    n_unbiased: int = Field(ge=0)
    categories: list[str]  # intersectional categories (Table 4), axes joined by "+"


class IntersectParagraphs(Section):
    """§3.1.2: paragraph synthesis; sizes per corpus (paper: 2,800 + 900 Indic, 2,722 + 982 Western)."""

    pool_size: int = Field(gt=0)  # unbiased candidates per axis for coherence-based sampling
    corpora: dict[Corpus, CorpusParagraphs]


class IntersectSplits(Section):
    """§3.3 and Table 7: seen-category subsets C1–C3 per corpus."""

    seen_train: float = Field(gt=0, lt=1)
    unbiased_train: float = Field(gt=0, lt=1)
    validation: float = Field(ge=0, lt=1)  # share of D_train,Ci held out for choosing k (not in the paper)
    subsets: dict[Corpus, dict[str, list[str]]]


class IntersectTriplets(Section):
    """§3.4–3.5 and App. A.4: triplet mining."""

    mining_model: str
    k: int = Field(gt=0)  # SR-k4
    k_large: int = Field(gt=0)  # SR-k10
    unbiased_negative_share: float = Field(ge=0, le=1)  # SR-k4-UN
    llm_per_strategy: int = Field(ge=0)  # paper: ~20,000 LLM triplets over four strategies


RUN_ID = r"^(indic|western)-(srk4|srk10|srk4un|srk4llm)-(C[0-9]+)$"


class IntersectTrain(Section):
    """§4.2, Alg. 1: one retriever per (corpus, strategy, subset) listed in ``runs``."""

    base_model: str  # paper: msmarco-roberta-base-v2 (App. A.7: MiniLM ablation)
    epochs: int = Field(gt=0)  # authors' README: 10
    batch_size: int = Field(gt=1)
    learning_rate: float = Field(gt=0)
    warmup_ratio: float = Field(ge=0, lt=1)
    scale: float = Field(gt=0)  # MNRL similarity scale (1 / temperature)
    max_seq_length: int = Field(gt=8)
    max_triplets: int | None = Field(gt=0)  # per run, sampled; null = every training triplet
    grad_cache_chunk: int = Field(ge=0)  # texts per chunk under gradient caching; 0 = plain MNRL (train.train_mnrl)
    runs: list[str]

    @field_validator("runs")
    @classmethod
    def _runs(cls, v: list[str]) -> list[str]:
        bad = [r for r in v if not re.match(RUN_ID, r)]
        if bad:
            raise ValueError(f"run ids must look like indic-srk4-C1 (corpus-strategy-subset), got {bad}")
        return v


class IntersectBaselines(Section):
    """§4.3 and App. A: multi-label classifiers (BCE, soft Hamming) and zero-shot LLM classification."""

    backbone: str  # paper: bert-base-uncased (BCE) / ModernBERT-base (soft Hamming)
    subsets: list[str]
    epochs: int = Field(gt=0)  # at most; training stops at convergence (converge_tol)
    batch_size: int = Field(gt=0)
    learning_rate: float = Field(gt=0)
    head_learning_rate: float = Field(gt=0)  # the new classification head (AdamW parameter group)
    converge_tol: float = Field(gt=0, lt=1)  # converged: an epoch's mean training loss within this of the last's
    max_length: int = Field(gt=8)
    soft_hamming_backbone: str  # paper: ModernBERT-base
    soft_hamming_tau: float = Field(gt=0)
    soft_hamming_max_epochs: int = Field(gt=0)  # paper: 20 with early stopping
    soft_hamming_patience: int = Field(gt=0)
    soft_hamming_val_fraction: float = Field(gt=0, lt=1)  # held out for early stopping (not given in the paper)
    soft_hamming_subsets: list[str]
    zero_shot_backend: Literal["none", "transformers", "openai"]
    zero_shot_max_paragraphs: int = Field(ge=0)  # per corpus, sampled from the held-out paragraphs
    zero_shot_max_new_tokens: int = Field(gt=0)  # greedy answer length of the Fig. 21 prompt
    threshold: float = Field(gt=0, lt=1)  # sigmoid probability above which a classifier predicts a label


class IntersectEvaluate(Section):
    """§5 and App. A.5: detection by top-k retrieval and label aggregation."""

    k: Annotated[int, Field(gt=0)] | Literal["validation"]  # a fixed depth, or chosen on the validation split
    k_sweep: list[int]
    aggregation: Literal["share", "top"]
    threshold: float = Field(gt=0, le=1)
    top_m: int = Field(gt=0)
    weighted: bool
    plateau_from: int = Field(gt=0)  # App. A.5: the depth after which the paper's gains diminish (15)
    plateau_bound: float = Field(gt=0)  # claim check: Jaccard change from plateau_from to the largest swept k: flat


class IntersectDetect(Section):
    """The ``biaslab detect`` command on any text (not the paper's evaluation, which scores its paragraphs only)."""

    abstain_quantile: float | None = Field(ge=0, lt=1)  # abstain below this quantile of the validation paragraphs'
    # best reference similarity (module biaslab.intersect.detect); null: never abstain


class Intersect(Section):
    reference: IntersectReference
    paragraphs: IntersectParagraphs
    splits: IntersectSplits
    triplets: IntersectTriplets
    train: IntersectTrain
    baselines: IntersectBaselines
    evaluate: IntersectEvaluate
    detect: IntersectDetect


SECTION = Intersect
