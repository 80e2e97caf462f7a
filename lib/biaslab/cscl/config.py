"""The ``cscl`` section of params.yaml (Chi et al. 2022, "Conditional Supervised Contrastive Learning for Fair Text
Classification"). Types and bounds only: every value is written in params.yaml (see ``biaslab.config``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..config import Section

Task = Literal["madlibs_race", "wiki_race", "sbic_race", "bios_gender", "genderqa_topic", "jigsaw_race",
               "biasbios_full"]
Mode = Literal["ce", "contrastive", "one_stage", "adversarial", "inlp"]
Schedule = Literal["joint", "alternating"]  # adversarial: who trains the discriminators (biaslab.cscl.train)
# the knobs each mode needs (a method's, and its training objective's, biaslab.cscl.train.Objective)
NEEDS: dict[str, tuple[str, ...]] = {"ce": (), "contrastive": ("temperature",), "one_stage": ("temperature", "gamma"),
                                     "adversarial": ("n_adversaries", "lam_diff", "adv_hidden", "schedule"),
                                     "inlp": ("min_accuracy", "by_class")}


class CsclSplits(Section):
    """App. B.1: jigsaw 60.5 / 10.2 / 29.3 %, biasbios 65 / 10 / 25 % (train / val / test)."""

    val: float = Field(gt=0, lt=1)
    test: float = Field(gt=0, lt=1)

    @model_validator(mode="after")
    def _shares(self):
        if self.val + self.test >= 1:
            raise ValueError(f"cscl.splits: val + test = {self.val + self.test} leaves no training rows")
        return self


Augmentation = Literal["eda", "clm_substitute", "clm_insert"]  # biaslab.cscl.augment.METHODS


class CsclAugment(Section):
    """App. B.3 (EDA: α = 0.1, four augmented examples per example); see ``biaslab.cscl.augment``."""

    strategy: Augmentation  # the paper's 'data augmentation strategy': eda | clm_substitute | clm_insert (back-translation: no offline model)
    alpha: float = Field(ge=0, le=1)  # EDA's α and the CLM augmentation rate (paper: 0.1 for both)
    n_aug: int = Field(gt=0)
    synonyms: Literal["embedding", "wordnet"]  # embedding: the encoder's nearest whole-word tokens (offline)
    wordnet_dir: str  # WordNet 3.0 database files (Debian wordnet-base: /usr/share/wordnet)
    neighbours: int = Field(gt=0)  # embedding synonyms per word
    keep_identity_terms: bool  # never replace / delete / insert identity terms (an addition to EDA)
    swap_identity_terms: bool  # counterfactual views: each identity term of a view swapped (beyond the paper)
    mask_proper_nouns: bool  # each word only ever capitalised in the texts (names...) masked in every view (beyond)
    lm: str  # the CLM augmentations' language model, a registry name (paper: roberta-base, a masked LM)
    top_k: int = Field(gt=0)  # CLM: a word is sampled by probability from this many predictions (nlpaug: 100)
    visible_only: bool  # CLM: predict only the places within the encoder's max_length words (the same visible views)


class CsclTrain(Section):
    """App. B.2, Table 5 (batch 32, lr 2e-5, Adam, 10 / 7 epochs; pre-training 15 / 25 epochs, patience 3)."""

    batch_size: int = Field(ge=2)  # fine-tuning batch (CE, one-stage, adversarial, every head; Table 5: 32)
    # two-stage CL's pre-training batch, each example with two views (the paper's grid: 32, 64, 128, 256)
    pretrain_batch_size: int = Field(ge=2)
    learning_rate: float = Field(gt=0)
    epochs: int = Field(gt=0)  # CE, one-stage and adversarial fine-tuning
    pretrain_epochs: int = Field(gt=0)  # two-stage CL, stage 1 (early stopping on validation loss)
    patience: int = Field(ge=0)  # 0 = no early stopping
    head_hidden: int = Field(gt=0)  # the 2-layer MLP head's hidden width
    head_epochs: int = Field(gt=0)  # heads on frozen features (two-stage stage 2, INLP)
    head_learning_rate: float = Field(gt=0)
    max_length: int = Field(gt=0)
    # top encoder layers fine-tuned; the frozen bottom runs once per text in the data stage (a CPU addition;
    # null = every layer, the paper)
    trainable_layers: int | None = Field(gt=0)
    # examples encoded at a time under gradient caching (biaslab.gradcache; the paper's large contrastive batches on
    # limited memory, §4.1): the same loss and gradient, one chunk's activations in memory; 0 = whole batch at once
    grad_cache_chunk: int = Field(ge=0)
    # the task classifier's cross-entropy: none (the paper) | balanced (each class weighted n / (k · n_c) on the
    # training split, sklearn's "balanced"), so that an imbalanced stand-in (sbic_race: 89 % one class) does not
    # train constant classifiers
    class_weight: Literal["none", "balanced"]


class CsclMethod(Section):
    """One method of §4.2 and its trade-off grid (Tables 3–4). ``grid``: λ (contrastive, one_stage), λ_adv
    (adversarial) or the number of INLP classifiers (inlp); ``ce`` has none."""

    mode: Mode
    grid: list[float]
    temperature: float | None = Field(None, gt=0)  # τ (contrastive, one_stage)
    gamma: float | None = Field(None, ge=0, le=1)  # one_stage: weight of L_sup (public code 0.3)
    n_adversaries: int | None = Field(None, gt=0)  # adversarial: 1, or 3 for diverse adversaries
    lam_diff: float | None = Field(None, ge=0)  # diverse adversaries' difference loss (paper 100 / 5000)
    adv_hidden: int | None = Field(None, gt=0)
    schedule: Schedule | None = None  # adversarial: who trains the discriminators
    min_accuracy: float | None = Field(None, ge=0, le=1)  # inlp: skip classifiers below this dev accuracy
    by_class: bool | None = None  # inlp: the equalized-odds variant

    @field_validator("grid")
    @classmethod
    def _grid(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if x < 0]
        if bad:
            raise ValueError(f"trade-off values {bad} are negative: λ, λ_adv and N_clf must be >= 0")
        return v

    @model_validator(mode="after")
    def _needs(self):
        missing = [k for k in NEEDS[self.mode] if getattr(self, k) is None]
        if missing:
            raise ValueError(f"a {self.mode} method needs {missing}")
        if self.mode != "ce" and not self.grid:
            raise ValueError(f"a {self.mode} method needs a non-empty grid")
        if self.mode == "inlp" and any(x != int(x) or x < 1 for x in self.grid):
            raise ValueError("an inlp grid lists numbers of classifiers (whole numbers >= 1)")
        return self


class CsclEmbeddingPlot(Section):
    """App. C.2, Fig. 10: t-SNE panels of the first seed's test features."""

    panels: list[str]  # methods to show: a ce method and a CL one (at its smallest and largest λ)
    perplexity: float = Field(gt=0)
    probe_folds: int = Field(ge=2)


class CsclSensitivity(Section):
    """§4.2 RQ3, Fig. 4 (biasbios; Fig. 9 jigsaw): two-stage CL at λ ∈ {0, 5} with one hyper-parameter varied at a
    time — τ ∈ {0.1, 0.5, 1, 2}, pre-training batch ∈ {32, 64, 128, 256}, augmentation ∈ {EDA, back-translation, CLM
    insert, CLM substitute}. Back-translation has no offline model; the CLM augmentations use the registry's causal
    LM in place of RoBERTa-base (``biaslab.cscl.augment``)."""

    task: Task  # the task varied (must be in cscl.tasks; paper: biasbios, jigsaw in the appendix)
    method: str  # a contrastive method of cscl.methods (two-stage CL)
    lambdas: list[float]  # λ values trained per variant (paper 0 and 5; each must be in the method's grid)
    temperatures: list[float]  # τ variants (the method's own τ is the default and is not retrained)
    batch_sizes: list[int]  # pre-training batch variants (cscl.train.pretrain_batch_size is the default)
    augmentations: list[Augmentation]  # augmentation variants (cscl.augment.strategy is the default)
    cache_chunk: int = Field(ge=0)  # batches larger than this are encoded under gradient caching (0 = never)
    seed_subset: list[int]  # a subset of cscl.seeds (the default setting's runs come from the main stage)

    @field_validator("temperatures")
    @classmethod
    def _tau(cls, v: list[float]) -> list[float]:
        if any(t <= 0 for t in v):
            raise ValueError(f"cscl.sensitivity.temperatures {v}: every τ must be > 0")
        return v

    @field_validator("batch_sizes")
    @classmethod
    def _bsz(cls, v: list[int]) -> list[int]:
        if any(b < 2 for b in v):
            raise ValueError(f"cscl.sensitivity.batch_sizes {v}: contrastive batches need at least 2 examples")
        return v


class CsclClaims(Section):
    """Bounds the claim checks use (``biaslab.cscl.findings``)."""

    f1_bound: float = Field(gt=0)  # "comparable F1": two-stage F1 at least one-stage F1 minus this
    eo_similar_share: float = Field(gt=0, lt=1)  # "similar" ΔEO of two methods: within this share of CE's ΔEO
    degenerate_share: float = Field(gt=0.5, le=1)  # a setting predicting one class for this share of rows is constant


class Cscl(Section):
    tasks: list[Task]
    full_data: dict[Task, str]  # the paper's data files for jigsaw_race / biasbios_full, when a user has them
    backbone: str  # the classifier encoder (paper: bert-base-uncased)
    offensive_threshold: float = Field(gt=0, le=1)  # sbic_race: y = annotator mean offensiveness >= this
    min_topic_questions: int = Field(gt=0)  # genderqa_topic: topics with at least this many questions
    max_rows: int = Field(ge=0)  # per task, a seeded (y, a)-stratified sample; 0 = all
    seeds: list[int]  # every method runs once per seed (paper: 5)
    splits: CsclSplits
    augment: CsclAugment
    train: CsclTrain
    methods: dict[str, CsclMethod]
    embedding_plot: CsclEmbeddingPlot
    sensitivity: CsclSensitivity
    claims: CsclClaims

    @model_validator(mode="after")
    def _check(self):
        if not self.seeds:
            raise ValueError("cscl.seeds is empty: list at least one seed (paper: 5)")
        unknown = [m for m in self.embedding_plot.panels if m not in self.methods]
        if unknown:
            raise ValueError(f"cscl.embedding_plot.panels {unknown} are not in cscl.methods ({list(self.methods)})")
        S = self.sensitivity
        if S.task not in self.tasks:
            raise ValueError(f"cscl.sensitivity.task {S.task!r} is not in cscl.tasks ({self.tasks})")
        if S.method not in self.methods or self.methods[S.method].mode != "contrastive":
            raise ValueError(f"cscl.sensitivity.method {S.method!r} must name a method of mode contrastive in "
                             f"cscl.methods ({list(self.methods)})")
        if self.augment.strategy in S.augmentations:
            raise ValueError(f"cscl.sensitivity.augmentations {S.augmentations} lists cscl.augment.strategy "
                             f"({self.augment.strategy!r}), the default setting whose runs are the main stage's: drop it")
        off_grid = [x for x in S.lambdas if x not in self.methods[S.method].grid]
        if off_grid or not S.lambdas:
            raise ValueError(f"cscl.sensitivity.lambdas {S.lambdas} must be non-empty values of "
                             f"cscl.methods.{S.method}.grid {self.methods[S.method].grid} (their default runs are the "
                             "main stage's)")
        extra = [s for s in S.seed_subset if s not in self.seeds]
        if extra or not S.seed_subset:
            raise ValueError(f"cscl.sensitivity.seed_subset {S.seed_subset} must be a non-empty subset of cscl.seeds {self.seeds}")
        full = [t for t in self.tasks if t in ("jigsaw_race", "biasbios_full") and t not in self.full_data]
        if full:
            raise ValueError(f"cscl.tasks {full} read the paper's full data: add their files to cscl.full_data")
        return self


SECTION = Cscl
