"""The ``ragfair`` section of params.yaml ("Teaching RAG to play fair"). Types and bounds only: every value is
written in params.yaml (see ``biaslab.config``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..config import Section


class SeatAudit(Section):
    """§3.2.1: the SEAT audit (May et al. 2019)."""

    model: str
    tests: list[str]  # empty: every SEAT test in the data
    n_samples: int = Field(gt=1)  # sampled permutations when the exact test is too large
    exact_limit: int = Field(gt=0)  # exact test when C(|X|+|Y|, |X|) <= this
    e_max: float = Field(gt=0)  # fairness score = 1 - |ES| / e_max (eq. 3)
    alpha: float = Field(gt=0, lt=1)


BBQCategory = Literal["Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
                      "Race_ethnicity", "Religion", "SES", "Sexual_orientation"]


class RagfairBBQ(Section):
    """§3.1.2 / App. 6.2: the BBQ table (released categories + regenerated missing ones)."""

    categories: list[BBQCategory]
    regenerate_seed: int
    max_pairs: int = Field(gt=0)  # filler pairs per template when fillers come from the vocabulary
    check_categories: list[BBQCategory]
    eval_fraction: float = Field(gt=0, lt=1)  # share of templates per category held out from training


class RagfairProbing(Section):
    """§3.2.2 / App. 6.3: layer probing and the BBQ SEAT table (Table 1) of the frozen encoder."""

    model: str
    max_rows_per_category: int = Field(ge=0)  # 0 = every row (paper)
    tau: float = Field(gt=0)  # temperature of the softmax-normalised bias score (not given in the paper)
    folds: int = Field(ge=2)
    ridge_alphas: list[float]
    shuffles: int = Field(ge=1)  # label-shuffle control refits
    seat_n_samples: int = Field(gt=1)


class RagfairLLMPairs(Section):
    """App. 6.2's LLM pipeline (used when ``ragfair.pairs.source`` is ``llm``; see ``biaslab.ragfair.llm_pairs``)."""

    topics: Literal["train", "all"]  # TREC Fair 2022 topics: the track's 50 training topics, or all 100
    group_pairs_per_category: int | None = Field(gt=0)  # BBQ descriptor pairs per category; None = all
    top_k: int = Field(gt=0)  # Wikipedia sentences retrieved per neutral query (paper: 10)
    sentences_per_query: int = Field(gt=0)  # of those, rephrased into pairs (paper: all 10)
    words: int = Field(gt=0)  # length of each rephrased variant (paper: 50 words)
    max_new_tokens: int = Field(gt=0)
    min_sentence_words: int = Field(gt=0)  # shorter WikiText sentences are not retrieval candidates


class RagfairPairs(Section):
    """§4.3 / App. 6.2: contrastive training pairs."""

    source: Literal["bbq", "llm"]  # bbq: offline construction from real BBQ text; llm: the paper's pipeline
    n_pairs: int = Field(ge=0)  # paper: 20,985 sampled from 135,845; 0 = all
    llm_pipeline: RagfairLLMPairs


class RagfairRun(Section):
    """One recipe; the optional fields left unset inherit ragfair.train's value (so a grid can vary them per
    run); ``lora`` / ``wiseft`` not set = not used."""

    lora: bool = False
    wiseft: bool = False
    alpha: float = Field(ge=0)  # fairness weight; 0 = the no-fairness control
    beta: float | None = Field(None, ge=0)
    tau: float | None = Field(None, gt=0)
    lora_r: int | None = Field(None, gt=0)
    lora_alpha: int | None = Field(None, gt=0)
    wiseft_layers: int | None = Field(None, gt=0)
    wiseft_lambda: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="after")
    def _trains_something(self):
        if not (self.lora or self.wiseft):
            raise ValueError("a run must set lora and/or wiseft (head masking alone is an evaluation checkpoint)")
        return self


class RagfairTrain(Section):
    """§3.4 / §4.3: training of the debiasing recipes with the fairness-aware objective."""

    base_model: str
    epochs: int = Field(gt=0)  # paper: 3
    batch_size: int = Field(gt=1)
    learning_rate: float = Field(gt=0)
    warmup_ratio: float = Field(ge=0, lt=1)
    max_grad_norm: float = Field(gt=0)
    max_seq_length: int = Field(gt=0)
    tau: float = Field(gt=0)  # NT-Xent temperature
    beta: float = Field(ge=0)  # ||ΔW||² weight
    fair_variant: Literal["squared", "mean_gap"]
    lora_r: int = Field(gt=0)
    lora_alpha: int = Field(gt=0)
    lora_dropout: float = Field(ge=0, lt=1)
    lora_targets: list[str]
    wiseft_layers: int = Field(gt=0)
    wiseft_lambda: float = Field(ge=0, le=1)
    gradient_probe_batches: int = Field(ge=0)  # batches on which the terms' gradient norms are measured; 0 = skip
    runs: dict[str, RagfairRun]


class RagfairHeadMask(Section):
    fraction: float = Field(gt=0, lt=1)  # top share of heads by ∂|SEAT|/∂m that are masked
    seat_categories: list[BBQCategory]


class RagfairCheckpoint(Section):
    name: str
    run: str | None = None  # a key of ragfair.train.runs; None = the frozen base encoder
    mask: bool = False  # head masking applied after training


class RagfairActs(Section):
    run: str  # a key of ragfair.train.runs with an exaggerated fairness weight α
    control: str  # the same recipe at α = 0


class RagfairEvaluate(Section):
    """Bias cards, Table 2 and the intrinsic–extrinsic correlation (§3.3, §4.2–4.3)."""

    max_rows_per_category: int = Field(ge=0)  # evaluation templates only; 0 = all
    seat_n_samples: int = Field(gt=1)
    bootstrap_rounds: int = Field(ge=0)
    perturbation_rounds: int = Field(ge=0)  # arithmetic-robustness check of the correlation; 0 = paper protocol only
    perturbation_cosine: float = Field(gt=0, lt=1)  # cosine of each perturbed vector to its original
    checkpoints: list[RagfairCheckpoint]
    include_all_runs: bool  # also evaluate every run of ragfair.train.runs unmasked (the App. 6.1 grid)
    acc_drop_bound: float = Field(gt=0)  # claim check: Acc@1 change (points) the paper calls a small cost (§4.3)
    acc_at_1: Literal["answers_question", "own_context"]  # what a top-1 hit is (biaslab.ragfair.extrinsic)
    acc_floor: float = Field(ge=0, le=100)  # competence: the frozen encoder's Acc@1 (%) at least this
    acts: RagfairActs | None  # the check that the fairness term acts at an exaggerated α; null = skip it


class Ragfair(Section):
    seat: SeatAudit
    bbq: RagfairBBQ
    probing: RagfairProbing
    pairs: RagfairPairs
    train: RagfairTrain
    head_mask: RagfairHeadMask
    evaluate: RagfairEvaluate

    @model_validator(mode="after")
    def _checkpoints_name_trained_runs(self):
        acts = self.evaluate.acts
        used = {c.run for c in self.evaluate.checkpoints if c.run is not None} | ({acts.run, acts.control} if acts
                                                                                  else set())
        unknown = sorted(used - set(self.train.runs))
        if unknown:
            raise ValueError(f"ragfair.evaluate.checkpoints / acts use runs {unknown} that are not in "
                             f"ragfair.train.runs "
                             f"({sorted(self.train.runs)}); add them there or fix the names")
        return self


SECTION = Ragfair
