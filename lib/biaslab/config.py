"""params.yaml as typed, validated objects — the one place where the project's knobs are defined.

Every section forbids unknown keys and checks types strictly, so a typo (``n_sample``) or a wrong type
(``n_samples: "abc"``) fails before any work starts, with the dotted key, the offending value and the
fix. ``load_params`` reads the file; ``notebook_params`` re-validates the values a notebook received
(papermill injects them as plain variables and only *warns* on mistakes).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class ParamsError(ValueError):
    """params.yaml (or a notebook parameter) is invalid; the message names the key and the fix."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# ----------------------------------------------------------------------------------------- common
class Common(_Section):
    seed: int = 42
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    batch_size: int = Field(64, gt=0)

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if v not in ("auto", "cpu", "cuda") and not (v.startswith("cuda:") and v[5:].isdigit()):
            raise ValueError("must be auto, cpu, cuda or cuda:N")
        return v


# ------------------------------------------------------------------------------------------- data
DATASETS = (
    "seat",
    "indibias",
    "sbic",
    "bbq",
    "twinviews_13k",
    "debiasing_rag_kim2025",
    "genderbias_ir_rekabsaz2020",
    "msmarco_fair_queries_rekabsaz2021",
    "grep_biasir",
    "trec_fair_2022",
    "wikitext2_valid_test",
    "trecdl_passage_bm25_top100_text",
)
DatasetName = Literal[DATASETS]  # type: ignore[valid-type]


class Data(_Section):
    raw_dir: str = "data/raw"
    datasets: list[DatasetName] = Field(default_factory=lambda: list(DATASETS))
    allow_online: bool = True  # download from the official location when no mirror is configured


# ----------------------------------------------------------------------------------------- models
class Models(_Section):
    allow_downloads: bool = False  # let hub ids download (needs network); offline by default
    encoder: str = "minilm"  # default bi-encoder (logical name in biaslab.models)
    local_dirs: dict[str, str] = Field(default_factory=dict)  # logical name -> folder with weights


# -------------------------------------------------------------------------------------------- llm
class OpenAIParams(_Section):
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this environment variable, never a file
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(2, ge=0)


class LLM(_Section):
    backend: Literal["rules", "transformers", "openai"] = "rules"
    model: str = "smollm2-135m-instruct"  # logical name for the transformers backend
    max_new_tokens: int = Field(256, gt=0)
    temperature: float = Field(0.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    cache: bool = True
    openai: OpenAIParams = Field(default_factory=OpenAIParams)


# ---------------------------------------------------------------------------------------- ragfair
class SeatAudit(_Section):
    model: str = "minilm"
    tests: list[str] = Field(default_factory=list)  # empty: every SEAT test in the data
    n_samples: int = Field(100_000, gt=1)  # sampled permutations when the exact test is too large
    exact_limit: int = Field(100_000, gt=0)  # exact test when C(|X|+|Y|, |X|) <= this
    e_max: float = Field(2.0, gt=0)  # FairnessScore = 1 - |ES| / e_max  (ragfair eq. 3)
    alpha: float = Field(0.05, gt=0, lt=1)


BBQCategory = Literal["Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
                      "Race_ethnicity", "Religion", "SES", "Sexual_orientation"]


class RagfairBBQ(_Section):
    """§3.1.2 / App. 6.2: the BBQ table (released categories + regenerated missing ones)."""

    categories: list[BBQCategory] = Field(default_factory=lambda: list(BBQCategory.__args__))
    regenerate_seed: int = 0
    max_pairs: int = Field(5, gt=0)  # filler pairs per template when fillers come from the vocabulary
    check_categories: list[BBQCategory] = Field(default_factory=lambda: ["Age", "Religion", "Sexual_orientation"])
    eval_fraction: float = Field(0.5, gt=0, lt=1)  # share of templates per category held out from training


class RagfairProbing(_Section):
    """§3.2.2 / App. 6.3: layer probing and the BBQ SEAT table (Table 1) of the frozen encoder."""

    model: str = "minilm"
    max_rows_per_category: int = Field(240, ge=0)  # 0 = every row (paper)
    tau: float = Field(0.05, gt=0)  # temperature of the softmax-normalised bias score (not given in the paper)
    folds: int = Field(5, ge=2)
    ridge_alphas: list[float] = Field(default_factory=lambda: [0.1, 1.0, 10.0, 100.0])
    shuffles: int = Field(1, ge=1)  # label-shuffle control refits
    seat_n_samples: int = Field(10_000, gt=1)


class RagfairLLMPairs(_Section):
    """App. 6.2's LLM pipeline (used when ``ragfair.pairs.source`` is ``llm``; see ``biaslab.ragfair.llm_pairs``)."""

    topics: Literal["train", "all"] = "train"  # TREC Fair 2022 topics: the track's 50 training topics, or all 100
    group_pairs_per_category: int | None = Field(8, gt=0)  # BBQ descriptor pairs per category; None = all
    top_k: int = Field(10, gt=0)  # Wikipedia sentences retrieved per neutral query (paper: 10)
    sentences_per_query: int = Field(1, gt=0)  # of those, rephrased into pairs (paper: all 10)
    words: int = Field(50, gt=0)  # length of each rephrased variant (paper: 50 words)
    max_new_tokens: int = Field(128, gt=0)
    min_sentence_words: int = Field(6, gt=0)  # shorter WikiText sentences are not retrieval candidates


class RagfairPairs(_Section):
    """§4.3 / App. 6.2: contrastive training pairs."""

    source: Literal["bbq", "llm"] = "bbq"  # bbq: offline construction from real BBQ text; llm: the paper's pipeline
    n_pairs: int = Field(320, ge=0)  # paper: 20,985 sampled from 135,845; 0 = all
    llm_pipeline: RagfairLLMPairs = Field(default_factory=RagfairLLMPairs)


class RagfairRun(_Section):
    """One recipe; unset fields inherit ragfair.train's value (so a grid can vary them per run)."""

    lora: bool = False
    wiseft: bool = False
    alpha: float = Field(1.0, ge=0)  # fairness weight; 0 = the no-fairness control
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


class RagfairTrain(_Section):
    """§3.4 / §4.3: training of the debiasing recipes with the fairness-aware objective."""

    base_model: str = "minilm"
    epochs: int = Field(1, gt=0)  # paper: 3
    batch_size: int = Field(16, gt=1)
    learning_rate: float = Field(1e-5, gt=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    max_grad_norm: float = Field(1.0, gt=0)
    max_seq_length: int = Field(128, gt=0)
    tau: float = Field(0.05, gt=0)  # NT-Xent temperature
    beta: float = Field(1e-4, ge=0)  # ||ΔW||² weight
    fair_variant: Literal["squared", "mean_gap"] = "squared"
    lora_r: int = Field(8, gt=0)
    lora_alpha: int = Field(16, gt=0)
    lora_dropout: float = Field(0.1, ge=0, lt=1)
    lora_targets: list[str] = Field(default_factory=lambda: ["query", "key", "value"])
    wiseft_layers: int = Field(2, gt=0)
    wiseft_lambda: float = Field(0.5, ge=0, le=1)
    runs: dict[str, RagfairRun] = Field(default_factory=dict)


class RagfairHeadMask(_Section):
    fraction: float = Field(0.1, gt=0, lt=1)  # top share of heads by ∂|SEAT|/∂m that are masked
    seat_categories: list[BBQCategory] = Field(default_factory=lambda: ["Gender_identity"])


class RagfairCheckpoint(_Section):
    name: str
    run: str | None = None  # a key of ragfair.train.runs; None = the frozen base encoder
    mask: bool = False  # head masking applied after training


class RagfairEvaluate(_Section):
    """Bias cards, Table 2 and the intrinsic–extrinsic correlation (§3.3, §4.2–4.3)."""

    max_rows_per_category: int = Field(80, ge=0)  # evaluation templates only; 0 = all
    seat_n_samples: int = Field(2_000, gt=1)
    bootstrap_rounds: int = Field(10, ge=0)
    checkpoints: list[RagfairCheckpoint] = Field(default_factory=list)
    include_all_runs: bool = False  # also evaluate every run of ragfair.train.runs unmasked (the App. 6.1 grid)


class Ragfair(_Section):
    seat: SeatAudit = Field(default_factory=SeatAudit)
    bbq: RagfairBBQ = Field(default_factory=RagfairBBQ)
    probing: RagfairProbing = Field(default_factory=RagfairProbing)
    pairs: RagfairPairs = Field(default_factory=RagfairPairs)
    train: RagfairTrain = Field(default_factory=RagfairTrain)
    head_mask: RagfairHeadMask = Field(default_factory=RagfairHeadMask)
    evaluate: RagfairEvaluate = Field(default_factory=RagfairEvaluate)

    @model_validator(mode="after")
    def _checkpoints_name_trained_runs(self):
        unknown = sorted({c.run for c in self.evaluate.checkpoints if c.run is not None} - set(self.train.runs))
        if unknown:
            raise ValueError(f"ragfair.evaluate.checkpoints use runs {unknown} that are not in ragfair.train.runs "
                             f"({sorted(self.train.runs)}); add them there or fix the names")
        return self


# -------------------------------------------------------------------------------------- intersect
Corpus = Literal["indic", "western"]


class IntersectReference(_Section):
    """§3.1.1: INDI-REFERENCE and SBIC-REFERENCE."""

    indi_n_unbiased: int = Field(140, ge=0)
    sbic_n_unbiased: int = Field(1700, ge=0)
    # offline only: unbiased SBIC stand-ins must also have mean offensiveness below this
    sbic_unbiased_max_offensive: float = Field(0.5, gt=0, le=1)
    # Table 3 per-label counts of biased SBIC posts (capped by what the dev + test aggregates hold)
    sbic_caps: dict[str, int] = Field(default_factory=lambda: {
        "race": 1540, "gender": 1540, "social": 901, "culture": 800, "victim": 800, "disabled": 800, "body": 591})


class CorpusParagraphs(_Section):
    n_biased: int = Field(gt=0)
    n_unbiased: int = Field(ge=0)
    categories: list[str]  # intersectional categories (Table 4), axes joined by "+"


class IntersectParagraphs(_Section):
    """§3.1.2: paragraph synthesis; sizes per corpus (paper: 2,800 + 900 Indic, 2,722 + 982 Western)."""

    pool_size: int = Field(8, gt=0)  # unbiased candidates per axis for coherence-based sampling
    corpora: dict[Corpus, CorpusParagraphs]


class IntersectSplits(_Section):
    """§3.3 and Table 7: seen-category subsets C1–C3 per corpus."""

    seen_train: float = Field(0.8, gt=0, lt=1)
    unbiased_train: float = Field(0.7, gt=0, lt=1)
    subsets: dict[Corpus, dict[str, list[str]]]


class IntersectTriplets(_Section):
    """§3.4–3.5 and App. A.4: triplet mining."""

    mining_model: str = "minilm"
    k: int = Field(4, gt=0)  # SR-k4
    k_large: int = Field(10, gt=0)  # SR-k10
    unbiased_negative_share: float = Field(0.2, ge=0, le=1)  # SR-k4-UN
    llm_per_strategy: int = Field(500, ge=0)  # paper: ~20,000 LLM triplets over four strategies


RUN_ID = r"^(indic|western)-(srk4|srk10|srk4un|srk4llm)-(C[0-9]+)$"


class IntersectTrain(_Section):
    """§4.2, Alg. 1: one retriever per (corpus, strategy, subset) listed in ``runs``."""

    base_model: str = "minilm"  # paper: msmarco-roberta-base-v2 (App. A.7: MiniLM ablation)
    epochs: int = Field(1, gt=0)  # authors' README: 10
    batch_size: int = Field(32, gt=1)
    learning_rate: float = Field(2e-5, gt=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    scale: float = Field(20.0, gt=0)  # MNRL similarity scale (1 / temperature)
    max_seq_length: int = Field(128, gt=8)
    max_triplets: int | None = Field(256, gt=0)  # per run, sampled; null = every training triplet
    runs: list[str]

    @field_validator("runs")
    @classmethod
    def _runs(cls, v: list[str]) -> list[str]:
        import re

        bad = [r for r in v if not re.match(RUN_ID, r)]
        if bad:
            raise ValueError(f"run ids must look like indic-srk4-C1 (corpus-strategy-subset), got {bad}")
        return v


class IntersectBaselines(_Section):
    """§4.3 and App. A: multi-label classifiers (BCE, soft Hamming) and zero-shot LLM classification."""

    backbone: str = "minilm"  # paper: bert-base-uncased (BCE) / ModernBERT-base (soft Hamming)
    subsets: list[str] = Field(default_factory=lambda: ["C1"])
    epochs: int = Field(2, gt=0)
    batch_size: int = Field(16, gt=0)
    learning_rate: float = Field(2e-5, gt=0)
    max_length: int = Field(128, gt=8)
    soft_hamming_backbone: str = "minilm"  # paper: ModernBERT-base
    soft_hamming_tau: float = Field(0.7, gt=0)
    soft_hamming_max_epochs: int = Field(2, gt=0)  # paper: 20 with early stopping
    soft_hamming_patience: int = Field(3, gt=0)
    soft_hamming_subsets: list[str] = Field(default_factory=lambda: ["C1"])
    zero_shot_backend: Literal["none", "transformers", "openai"] = "transformers"
    zero_shot_max_paragraphs: int = Field(24, ge=0)  # per corpus, sampled from the held-out paragraphs


class IntersectEvaluate(_Section):
    """§5 and App. A.5: detection by top-k retrieval and label aggregation."""

    k: int = Field(15, gt=0)
    k_sweep: list[int] = Field(default_factory=lambda: [1, 2, 3, 5, 10, 15, 20, 25, 30])
    aggregation: Literal["share", "top"] = "share"
    threshold: float = Field(0.2, gt=0, le=1)
    top_m: int = Field(2, gt=0)
    weighted: bool = False


class Intersect(_Section):
    reference: IntersectReference = Field(default_factory=IntersectReference)
    paragraphs: IntersectParagraphs
    splits: IntersectSplits
    triplets: IntersectTriplets = Field(default_factory=IntersectTriplets)
    train: IntersectTrain
    baselines: IntersectBaselines = Field(default_factory=IntersectBaselines)
    evaluate: IntersectEvaluate = Field(default_factory=IntersectEvaluate)


# ------------------------------------------------------------------------------------- ragcontrol
Task = Literal["GenderBias-QA", "PoliticBias-QA"]
CandidateCorpus = Literal["msmarco", "wikipedia", "twinviews"]


class RagcontrolCandidates(_Section):
    """App. "Training": candidate documents per training question (see ``biaslab.ragcontrol.candidates``)."""

    top_k: int = Field(3, gt=0)  # per corpus and query variant (paper: 3)
    corpora: dict[Task, list[CandidateCorpus]] = Field(default_factory=lambda: {
        "GenderBias-QA": ["msmarco", "wikipedia"], "PoliticBias-QA": ["msmarco", "wikipedia", "twinviews"]})
    max_pool: int = Field(0, ge=0)  # documents per candidate corpus, a seeded sample; 0 = the whole corpus
    max_positives: int = Field(10, gt=0)  # public code: 10
    max_negatives: int = Field(10, gt=0)  # public code: 10
    pad_negatives_with_neutral: dict[Task, bool] = Field(default_factory=lambda: {
        "GenderBias-QA": True, "PoliticBias-QA": False})  # as the public code's data.py


class RagcontrolRun(_Section):
    task: Task
    freeze_layers: int = Field(0, ge=0)  # public code --freeze_layers: 0 = full fine-tuning, k = last k MLPs
    learning_rate: float | None = Field(None, gt=0)  # None: ragcontrol.train.learning_rate
    epochs: int | None = Field(None, gt=0)


class RagcontrolTrain(_Section):
    """App. "Training" + the public code's grid (lr {3e-5, 1e-5}, epochs {5, 10, 15}, freeze {0..4}, merge
    {0.1..0.9}, batch 8, AdamW wd 0.01, 10 warm-up steps, scale 50)."""

    epochs: int = Field(5, gt=0)
    batch_size: int = Field(8, gt=0)
    learning_rate: float = Field(3e-5, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    warmup_steps: int = Field(10, ge=0)
    scale: float = Field(50.0, gt=0)
    max_seq_length: int = Field(512, gt=0)
    runs: dict[str, RagcontrolRun]
    merges: list[float] = Field(default_factory=lambda: [0.1, 0.3, 0.5, 0.7, 0.9, 1.0])  # WiSE-FT m; 1.0 = as trained

    @field_validator("merges")
    @classmethod
    def _merges(cls, v: list[float]) -> list[float]:
        if not v or any(not 0 < m <= 1 for m in v):
            raise ValueError("WiSE-FT merge weights must lie in (0, 1]")
        return v


class RagcontrolProjection(_Section):
    alphas: list[float] = Field(default_factory=lambda: [round(1.0 + 0.2 * i, 1) for i in range(11)])
    words: dict[Task, str] = Field(default_factory=lambda: {"GenderBias-QA": "female", "PoliticBias-QA": "republican"})


class RagcontrolSampling(_Section):
    top_n: list[int] = Field(default_factory=lambda: [3, 8])
    taus: list[float] = Field(default_factory=lambda: [0.0, 0.1, 0.25, 0.5, 1.0])


class RagcontrolReader(_Section):
    """One reader LLM (see ``biaslab.ragcontrol.reader``); the paper compares six (App. "All 6 LLMs")."""

    engine: Literal["transformers", "openai"] = "transformers"  # openai: an OpenAI-compatible endpoint, generate modes
    name: str = "smollm2-135m-instruct"  # transformers: a causal LM of the model registry; openai: the endpoint's model
    base_url: str | None = None  # openai: this reader's endpoint; None = llm.openai.base_url (key, timeout from there)
    gender_mode: Literal["likelihood", "generate"] = "likelihood"
    politics_mode: Literal["letter", "claim", "generate"] = "claim"

    @model_validator(mode="after")
    def _api_generates(self):
        if self.engine == "openai" and (self.gender_mode, self.politics_mode) != ("generate", "generate"):
            raise ValueError("an openai reader has no option likelihoods here: set gender_mode and politics_mode "
                             "to generate")
        if self.engine == "transformers" and self.base_url is not None:
            raise ValueError("base_url is for engine: openai readers only")
        return self


class RagcontrolReading(_Section):
    """What every reader shares: the question subset, prompt documents, batching, the free-generation check."""

    max_questions: int = Field(0, ge=0)  # a seeded subset of test questions per task; 0 = all
    max_doc_words: int | None = Field(None, gt=0)  # truncate documents in reader prompts; None = whole
    batch_size: int = Field(8, gt=0)
    generation_check: int = Field(8, ge=0)  # questions per task answered by free generation to show how often a
    #                                         scored reader's generation lands on a side; 0 = skip


class RagcontrolUtility(_Section):
    trec_dl: list[Literal["dl19", "dl20"]] = Field(default_factory=lambda: ["dl19", "dl20"])
    k: int = Field(10, gt=0)  # nDCG@k of the re-ranked BM25 top-100
    max_queries: int = Field(0, ge=0)  # judged queries per year, a seeded sample; 0 = all


class Ragcontrol(_Section):
    tasks: list[Task] = Field(default_factory=lambda: ["GenderBias-QA", "PoliticBias-QA"])
    embedder: str = "minilm"  # paper: thenlper/gte-base
    max_seq_length: int = Field(512, gt=0)
    judge: Literal["lexicon", "llm"] = "lexicon"  # llm: the appendix judge prompts through the llm section
    candidates: RagcontrolCandidates = Field(default_factory=RagcontrolCandidates)
    train: RagcontrolTrain
    projection: RagcontrolProjection = Field(default_factory=RagcontrolProjection)
    sampling: RagcontrolSampling = Field(default_factory=RagcontrolSampling)
    reader: RagcontrolReading = Field(default_factory=RagcontrolReading)
    readers: dict[str, RagcontrolReader] = Field(default_factory=lambda: {"smollm2": RagcontrolReader()})
    utility: RagcontrolUtility = Field(default_factory=RagcontrolUtility)

    @model_validator(mode="after")
    def _runs_use_listed_tasks(self):
        bad = sorted(name for name, r in self.train.runs.items() if r.task not in self.tasks)
        if bad:
            raise ValueError(f"ragcontrol.train.runs {bad} train a task not in ragcontrol.tasks {self.tasks}")
        if not self.readers:
            raise ValueError("ragcontrol.readers is empty: list at least one reader LLM")
        bad = sorted(k for k in self.readers if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", k))
        if bad:
            raise ValueError(f"ragcontrol.readers {bad}: reader keys name files and stages — use letters, digits, "
                             "'.', '_' and '-'")
        return self


# --------------------------------------------------------------------------------------- top level
class Params(_Section):
    common: Common = Field(default_factory=Common)
    data: Data = Field(default_factory=Data)
    models: Models = Field(default_factory=Models)
    llm: LLM = Field(default_factory=LLM)
    ragfair: Ragfair = Field(default_factory=Ragfair)
    intersect: Intersect | None = None
    ragcontrol: Ragcontrol | None = None

    def get(self, dotted: str) -> Any:
        """The value at a dotted key (``ragfair.seat.n_samples``)."""
        node: Any = self
        for part in dotted.split("."):
            if isinstance(node, BaseModel):
                if part not in type(node).model_fields:
                    raise ParamsError(f"params: no key {dotted!r} (unknown part {part!r})")
                node = getattr(node, part)
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise ParamsError(f"params: no key {dotted!r}")
        return node


def _format_errors(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            parent = ".".join(str(p) for p in e["loc"][:-1])
            lines.append(f"  {key}: unknown key — remove it or fix its spelling (see the keys of "
                         f"{parent or 'the top level'} in params.yaml and biaslab/config.py)")
        elif isinstance(e.get("input"), dict):  # a whole section failed a cross-field check: the message says why
            lines.append(f"  {key}: {e['msg']}")
        else:
            lines.append(f"  {key}: {e['msg']} (got {e.get('input')!r})")
    return f"invalid parameters in {source}:\n" + "\n".join(lines)


def validate(raw: dict[str, Any], source: str = "params.yaml") -> Params:
    if not isinstance(raw, dict):
        raise ParamsError(f"{source}: expected a mapping of sections at the top level, got {type(raw).__name__}")
    try:
        return Params.model_validate(raw)
    except ValidationError as err:
        raise ParamsError(_format_errors(err, source)) from None


def read_yaml(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ParamsError(f"{path}: file not found — run from the repository root or set BIASLAB_ROOT")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise ParamsError(f"{path}: not valid YAML: {err}") from None


def load_params(path: str | os.PathLike | None = None) -> Params:
    """Read and validate params.yaml (default: the repository's)."""
    from .paths import repo_root

    path = Path(path) if path else repo_root() / "params.yaml"
    return validate(read_yaml(path), str(path))


def _merge(base: dict[str, Any], override: dict[str, Any]) -> None:
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def apply_overrides(overrides_file: str | os.PathLike, params_file: str | os.PathLike | None = None) -> Path:
    """Merge the keys of ``overrides_file`` into params.yaml (comments kept), after validating the result.

    Used to switch to the documented paper-scale configuration: ``biaslab params --apply
    configs/paper-scale.yaml``. Nothing is written when the merged parameters are invalid."""
    from ruamel.yaml import YAML

    from .io import atomic_open
    from .paths import repo_root

    target = Path(params_file) if params_file else repo_root() / "params.yaml"
    override = read_yaml(overrides_file)
    merged = read_yaml(target)
    _merge(merged, override)
    validate(merged, f"{target} merged with {overrides_file}")
    rt = YAML()
    rt.preserve_quotes = True
    doc = rt.load(target.read_text(encoding="utf-8"))
    # merge the override's round-trip nodes, so scalars keep their spelling (ruamel would re-emit a float 2e-5
    # as ``2e-05``, which YAML 1.1 readers take for a string)
    _merge(doc, rt.load(Path(overrides_file).read_text(encoding="utf-8")))
    buf = io.StringIO()
    rt.dump(doc, buf)
    written = yaml.safe_load(buf.getvalue())
    if written != merged:
        raise ParamsError(f"merging {overrides_file} into {target} would not round-trip through YAML; "
                          "write the override values in plain YAML (e.g. 2.0e-5, not 2e-5)")
    with atomic_open(target) as fh:
        fh.write(buf.getvalue())
    return target


def leaf_names(params: Params, keys: list[str]) -> dict[str, str]:
    """Map notebook variable names to the dotted keys they carry.

    A key that names a section (``ragfair.seat``) contributes each of its fields; a scalar key
    (``common.seed``) contributes its last component. Two keys giving the same name is an error."""
    names: dict[str, str] = {}
    for key in keys:
        value = params.get(key)
        children = (
            {f"{key}.{f}": f for f in type(value).model_fields}
            if isinstance(value, BaseModel)
            else {key: key.rsplit(".", 1)[-1]}
        )
        for dotted, name in children.items():
            if name in names:
                raise ParamsError(f"parameter name {name!r} comes from both {names[name]} and {dotted}; "
                                  "list a narrower key in the stage's params")
            names[name] = dotted
    return names


def flatten_for_notebook(params: Params, keys: list[str]) -> dict[str, Any]:
    """The papermill parameters for a stage: each notebook variable with its JSON-ready value."""
    out: dict[str, Any] = {}
    for name, dotted in leaf_names(params, keys).items():
        value = params.get(dotted)
        out[name] = value.model_dump() if isinstance(value, BaseModel) else _plain(value)
    return out


def _plain(value: Any) -> Any:
    """Containers of sections (``ragfair.train.runs``, ``ragfair.evaluate.checkpoints``) as plain data; unset
    optional fields are left out (validation restores them), so notebook defaults stay short."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=True)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _set(raw: dict[str, Any], dotted: str, value: Any) -> None:
    node = raw
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def notebook_params(namespace: dict[str, Any], stage: str) -> Params:
    """Validate a notebook's parameter variables and return the full typed ``Params``.

    ``namespace`` is the notebook's ``globals()``; ``stage`` the DVC stage that runs it. The values of the
    stage's keys (dvc.yaml ``params``) are taken from the notebook variables — defaults from the
    ``parameters`` cell, or what papermill injected — and checked with the same schema as params.yaml,
    so ``-p n_samples abc`` fails here with the key's name instead of misbehaving later."""
    from .stages import stage_params

    base = load_params()
    raw = base.model_dump()
    for name, dotted in leaf_names(base, stage_params(stage)).items():
        if name in namespace:
            _set(raw, dotted, namespace[name])
    return validate(raw, f"the parameters of notebook stage {stage!r}")
