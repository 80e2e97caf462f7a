"""fairrank's neural re-rankers (§3.3, §4.2; App. A) and their baselines, trained with the Hugging Face ``Trainer``.

Two ranker families (``fairrank.train.family``; the loss is model-agnostic, §3.3):

* ``bi_encoder`` (the default) — the paper's subject, a *dense* ranker: the pretrained sentence encoder embeds query
  and passage apart (mean pooling, unit length) and Φ(q, d) is their cosine. The shipped all-MiniLM-L6-v2 was
  trained for retrieval (MS MARCO among its data), so the base ranker starts above the BM25 order it re-ranks; the
  penalty / reward terms then act on a ranker that works.
* ``cross_encoder`` — ``AutoModelForSequenceClassification`` with one new output on ``[CLS] query [SEP] passage
  [SEP]``, the OpenMatch cross-encoder of the authors' code; its head starts untrained, and at CPU sizes (600 pairs,
  one layer, one epoch) it ranks below BM25.

Φ(q, d) is the raw score (Algorithm 1's sigmoid is monotone and left to the losses: tanh Φ in the pairwise hinge,
σ in the pointwise MSE, as the authors' code). The model's ``forward`` returns the loss of its :class:`Objective`,
so the stock ``Trainer`` (AdamW, linear schedule with warm-up, seeds, GPU when present) trains every variant:

* ``pairwise`` — :func:`biaslab.fairrank.losses.pairwise_loss` on (q, d⁺, d⁻) pairs (the base ranker: mode none;
  the six scenarios: penalty / reward × relevant / irrelevant / both);
* ``pointwise`` — :func:`biaslab.fairrank.losses.pointwise_loss` on (q, d, y) rows;
* **AdvBERT** (Rekabsaz et al. 2021; a baseline): the pairwise hinge plus λ_adv · CE of an adversary that predicts
  the passage's gender class (female- / male-leaning / neither, from the representative words) from the pair's
  pooled [CLS] state (cross-encoder) or the passage embedding (bi-encoder) through a gradient-reversal layer;
* **LWS** (Bigdeli et al. 2022; a baseline) changes the data, not the model: :func:`biaslab.fairrank.prepare.lws_pairs`
  swaps a share of each query's negatives for its most gender-biased non-relevant candidates (see there).

**Partial fine-tuning on CPU** (``trainable_layers``; an addition behind a parameter, the paper fine-tunes every
layer): the bottom layers are frozen and their states come from the data stage's :class:`biaslab.frozen.StateBank`
— one entry per (query, passage) pair for the cross-encoder, per query and per passage for the bi-encoder —, so
each ranker trains and scores with its top layers (and head) only. ``trainable_layers: null`` trains the whole
model on token ids (the paper scale).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..embed.tokens import read_inputs
from ..frozen import StateBank, bottom_states, frozen_count, pad_states, run_layers, tokenized
from ..layers import grad_reverse
from ..models import new_head_classifier
from ..runtime import progress, progress_enabled, seed_everything, select_device
from ..train import _deterministic_log_callbacks
from .losses import MODES, TARGETS, pairwise_loss, pointwise_loss
from .prepare import pair_key, passage_key, query_key

OBJECTIVES = ("pairwise", "pointwise")
FAMILIES = ("bi_encoder", "cross_encoder")
GENDER_CLASSES = ("n", "f", "m")


@dataclass(frozen=True)
class Objective:
    """One ranker's loss: ``objective`` pairwise | pointwise, regularisation ``mode`` none | penalty | reward on
    ``target``, weight ``lam``, hinge ``margin``; ``adv_lambda`` > 0 adds the AdvBERT adversary (``adv_hidden`` units)."""

    objective: str
    mode: str
    target: str
    lam: float
    margin: float
    adv_lambda: float
    adv_hidden: int

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"unknown ranking objective {self.objective!r}: one of {OBJECTIVES}")
        if self.mode not in MODES or self.target not in TARGETS:
            raise ValueError(f"unknown regularisation {self.mode!r} on {self.target!r}: modes {MODES}, targets {TARGETS}")
        if self.lam < 0 or self.adv_lambda < 0:
            raise ValueError(f"λ = {self.lam} and λ_adv = {self.adv_lambda} must be >= 0")
        if self.adv_lambda and (self.objective != "pairwise" or self.adv_hidden <= 0):
            raise ValueError("the AdvBERT adversary needs the pairwise objective and adv_hidden > 0")


def build_ranker(model_dir, objective: Objective, *, family: str, n_frozen: int, seed: int):
    """A ranker of ``family`` (an ``nn.Module``) on the encoder in ``model_dir``; new layers (the cross-encoder's
    head, the adversary) are initialised from ``seed``. With ``n_frozen`` > 0 it reads frozen-bottom states instead
    of token ids (BERT-style encoders)."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from transformers import AutoModel

    if family not in FAMILIES:
        raise ValueError(f"fairrank.train.family = {family!r}: one of {FAMILIES}")
    reverse = grad_reverse()
    seed_everything(seed)

    class Ranker(nn.Module):
        def __init__(self):
            super().__init__()
            cross = family == "cross_encoder"
            self.hf = new_head_classifier(model_dir, num_labels=1) if cross else AutoModel.from_pretrained(
                str(model_dir), add_pooling_layer=False)
            self.config = self.hf.config
            self.n_frozen = int(n_frozen)
            self.objective = objective
            if self.n_frozen:
                base = self.hf.base_model
                if not hasattr(base, "encoder") or (cross and getattr(base, "pooler", None) is None):
                    raise ValueError(f"{type(self.hf).__name__}: frozen-layer training needs a BERT-style encoder"
                                     f"{' with a pooler' if cross else ''}; set fairrank.train.trainable_layers: null "
                                     "for this backbone")
                for p in base.embeddings.parameters():
                    p.requires_grad_(False)
                for layer in base.encoder.layer[: self.n_frozen]:
                    for p in layer.parameters():
                        p.requires_grad_(False)
            if objective.adv_lambda:
                dim = self.config.hidden_size
                self.adversary = nn.Sequential(nn.Linear(dim, objective.adv_hidden), nn.ReLU(),
                                               nn.Linear(objective.adv_hidden, len(GENDER_CLASSES)))

        def _hidden(self, x, mask, tt=None):
            base = self.hf.base_model
            if self.n_frozen:
                return run_layers(base.encoder.layer[self.n_frozen:], self.config, x, mask)
            return base(input_ids=x, attention_mask=mask, token_type_ids=tt).last_hidden_state

        def _embed(self, x, mask, tt=None):
            """The sentence embedding of sentence-transformers' all-MiniLM-L6-v2: mean over real tokens, unit length."""
            h = self._hidden(x, mask, tt)
            m = mask.unsqueeze(-1).to(h.dtype)
            return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

        def encode(self, x, mask, tt=None, xq=None, maskq=None, ttq=None):
            """(score Φ [batch], pooled state) for states ``x`` (frozen bottom) or token ids ``x`` — the pair
            (cross-encoder), or the passage with the query in ``xq`` (bi-encoder)."""
            if family == "bi_encoder":
                d = self._embed(x, mask, tt)
                return (self._embed(xq, maskq, ttq) * d).sum(-1), d
            if self.n_frozen:
                pooled = self.hf.base_model.pooler(self._hidden(x, mask))
                return self.hf.classifier(self.hf.dropout(pooled)).squeeze(-1), pooled
            out = self.hf(input_ids=x, attention_mask=mask, token_type_ids=tt, output_hidden_states=True)
            return out.logits.squeeze(-1), out.hidden_states[-1][:, 0]

        def forward(self, term, term_neg=None, labels=None, gender=None, gender_neg=None, num_items_in_batch=None,
                    **inputs):
            o = self.objective
            first = {k: v for k, v in inputs.items() if not k.endswith("_neg")}
            s, pooled = self.encode(**first)
            if o.objective == "pointwise":
                return {"loss": pointwise_loss(s, labels, term, mode=o.mode, target=o.target, lam=o.lam), "scores": s}
            s_neg, pooled_neg = self.encode(**{k[:-4]: v for k, v in inputs.items() if k.endswith("_neg")})
            loss = pairwise_loss(s, s_neg, term, term_neg, mode=o.mode, target=o.target, lam=o.lam, margin=o.margin)
            if o.adv_lambda:
                logits = self.adversary(reverse(torch.cat([pooled, pooled_neg])))
                loss = loss + o.adv_lambda * F.cross_entropy(logits, torch.cat([gender, gender_neg]))
            return {"loss": loss, "scores": s}

    return Ranker()


# ------------------------------------------------------------------------------------------ states
def ranker_states(model_dir, pairs: pd.DataFrame, texts: dict[str, str], *, family: str, n_frozen: int,
                  max_length: int, batch_size: int, device: str) -> StateBank:
    """The frozen bottom's states for every distinct (``qid``, ``query``, ``docid``) row of ``pairs``
    (``texts``: docid → passage): per pair, keyed by :func:`biaslab.fairrank.prepare.pair_key`, for the
    cross-encoder; per query and per passage (:func:`~biaslab.fairrank.prepare.query_key`,
    :func:`~biaslab.fairrank.prepare.passage_key`) for the bi-encoder."""
    from transformers import AutoModel, AutoTokenizer

    if family not in FAMILIES:
        raise ValueError(f"fairrank.train.family = {family!r}: one of {FAMILIES}")
    if not n_frozen:
        return StateBank(0)
    rows = pairs[["qid", "query", "docid"]].drop_duplicates(["qid", "docid"])
    if family == "cross_encoder":
        lookup = {pair_key(q, d): (qq, texts[d]) for q, qq, d in zip(rows["qid"], rows["query"], rows["docid"],
                                                                      strict=True)}
        what = "query-passage pairs"
    else:
        lookup = {query_key(q): (qq,) for q, qq in zip(rows["qid"], rows["query"], strict=True)}
        lookup.update({passage_key(d): (texts[d],) for d in rows["docid"]})
        what = "queries and passages"
    keys = list(lookup)
    if not keys:
        return StateBank(n_frozen)
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).to(select_device(device))
    columns = list(zip(*lookup.values(), strict=True))
    read = tokenized(tok, *columns, max_length=max_length, truncation="only_second" if len(columns) == 2 else True)
    parts = bottom_states(model, lambda idx: read_inputs(read, idx), read.lengths, n_frozen=n_frozen,
                          batch_size=batch_size, desc=f"frozen layers 1-{n_frozen} of {len(keys)} {what}")
    offsets = np.cumsum([0, *(len(p) for p in parts)])
    return StateBank(n_frozen, keys, np.concatenate(parts).astype(np.float16), offsets)


# --------------------------------------------------------------------------------------------- data
class _Inputs:
    """One (query, passage) pair as the model of ``family`` reads it: frozen states, or token ids when the whole model
    trains; the bi-encoder's query side under ``q`` keys."""

    def __init__(self, tokenizer, bank: StateBank | None, texts: dict[str, str], max_length: int, family: str):
        if family not in FAMILIES:
            raise ValueError(f"fairrank.train.family = {family!r}: one of {FAMILIES}")
        self.tok, self.bank, self.texts, self.max_length, self.family = tokenizer, bank, texts, max_length, family

    def item(self, qid: str, query: str, docid: str) -> dict:
        bi = self.family == "bi_encoder"
        if self.bank is not None and self.bank.n_frozen:
            if bi:
                return {"states": self.bank.get(passage_key(docid)), "q_states": self.bank.get(query_key(qid))}
            return {"states": self.bank.get(pair_key(qid, docid))}
        keep = ("input_ids", "attention_mask", "token_type_ids")
        if bi:
            d = self.tok(self.texts[docid], truncation=True, max_length=self.max_length)
            q = self.tok(query, truncation=True, max_length=self.max_length)
            return {"d": {k: d[k] for k in keep if k in d}, "q": {k: q[k] for k in keep if k in q}}
        enc = self.tok(query, self.texts[docid], truncation="only_second", max_length=self.max_length)
        return {k: enc[k] for k in keep if k in enc}

    def _pad_tokens(self, items: list[dict], prefix: str = "") -> dict:
        enc = self.tok.pad(items, return_tensors="pt")
        out = {f"x{prefix}": enc["input_ids"], f"mask{prefix}": enc["attention_mask"]}
        if "token_type_ids" in enc:
            out[f"tt{prefix}"] = enc["token_type_ids"]
        return out

    def pad(self, items: list[dict]) -> dict:
        """The model's ``encode`` keyword arguments for a batch of items."""
        if "states" in items[0]:
            x, mask = pad_states([it["states"] for it in items])
            out = {"x": x, "mask": mask}
            if "q_states" in items[0]:
                out["xq"], out["maskq"] = pad_states([it["q_states"] for it in items])
            return out
        if "q" in items[0]:
            return {**self._pad_tokens([it["d"] for it in items]), **self._pad_tokens([it["q"] for it in items], "q")}
        return self._pad_tokens(items)

    @staticmethod
    def size(item: dict) -> int:
        """Tokens of the passage side (the batching key of :func:`score`)."""
        if "states" in item:
            return len(item["states"])
        return len(item.get("d", item)["input_ids"])


class _Rows:
    def __init__(self, items: list[dict]):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def save_state_banks(model_dirs: Mapping[str, str], backbones, rows: pd.DataFrame, texts: Mapping[str, str], *,
                     trainable_layers: int, family: str, max_length: int, batch_size: int, device: str,
                     out_dir: Path) -> list[str]:
    """``fairrank_data``'s frozen bottoms: per backbone, :func:`ranker_states` below its top ``trainable_layers``
    saved as ``<out_dir>/<backbone>.npz`` (what ``fairrank_train`` reads). Returns a line per backbone."""
    lines = []
    for name in backbones:
        n_frozen = frozen_count(model_dirs[name], trainable_layers, knob="fairrank.train.trainable_layers")
        bank = ranker_states(model_dirs[name], rows, texts, family=family, n_frozen=n_frozen, max_length=max_length,
                             batch_size=batch_size, device=device)
        bank.save(Path(out_dir) / f"{name}.npz")
        lines.append(f"{name}: {n_frozen} frozen layers, states of {len(bank)} texts or pairs "
                     f"({bank.flat.nbytes / 2**20:.0f} MiB)")
    return lines


def _collate(inputs: _Inputs, objective: str):
    import torch

    def collate(items):
        batch = {**inputs.pad([it["first"] for it in items]),
                 "term": torch.tensor([it["term"] for it in items], dtype=torch.float32)}
        if objective == "pointwise":
            batch["labels"] = torch.tensor([it["label"] for it in items], dtype=torch.float32)
            return batch
        batch.update({f"{k}_neg": v for k, v in inputs.pad([it["second"] for it in items]).items()})
        batch["term_neg"] = torch.tensor([it["term_neg"] for it in items], dtype=torch.float32)
        if "gender" in items[0]:
            batch["gender"] = torch.tensor([it["gender"] for it in items])
            batch["gender_neg"] = torch.tensor([it["gender_neg"] for it in items])
        return batch

    return collate


def gender_class(rep_f: np.ndarray, rep_m: np.ndarray) -> np.ndarray:
    """AdvBERT's protected label of a passage: 0 neither / balanced, 1 more female, 2 more male representative
    words."""
    rep_f, rep_m = np.asarray(rep_f), np.asarray(rep_m)
    return np.where(rep_f > rep_m, 1, np.where(rep_m > rep_f, 2, 0))


def training_items(data: pd.DataFrame, objective: Objective, terms: pd.DataFrame, inputs: _Inputs, *,
                   psi_mode: str, zeta_pos: str) -> list[dict]:
    """Model inputs for pairs (``qid, query, pos, neg``) or rows (``qid, query, docid, label``) with each passage's
    regularisation term: Ψ (``psi_mode`` signed | abs) for the penalty, ζ for the reward (``zeta_pos: one`` fixes
    ζ(d⁺) = 1, the authors' code), 0 without regularisation."""
    from .bias import lookup, psi

    t = terms.set_index("docid")

    def term(docids, positive: bool) -> np.ndarray:
        if objective.mode == "penalty":
            return psi(lookup(terms, docids, "def_f"), lookup(terms, docids, "def_m"), psi_mode)
        if objective.mode == "reward":
            if positive and zeta_pos == "one":
                return np.ones(len(docids))
            return lookup(terms, docids, "zeta")
        return np.zeros(len(docids))

    if objective.objective == "pointwise":
        docids, labels = data["docid"].tolist(), data["label"].to_numpy()
        tv = np.where(labels == 1, term(docids, True), term(docids, False))
        return [{"first": inputs.item(q, qq, d), "term": float(v), "label": int(y)}
                for q, qq, d, y, v in zip(data["qid"], data["query"], data["docid"], data["label"], tv, strict=True)]
    tp, tn = term(data["pos"].tolist(), True), term(data["neg"].tolist(), False)
    items = []
    gp = gn = None
    if objective.adv_lambda:
        gp = gender_class(t.loc[data["pos"], "rep_f"], t.loc[data["pos"], "rep_m"])
        gn = gender_class(t.loc[data["neg"], "rep_f"], t.loc[data["neg"], "rep_m"])
    for i, (q, qq, p, n) in enumerate(zip(data["qid"], data["query"], data["pos"], data["neg"], strict=True)):
        it = {"first": inputs.item(q, qq, p), "second": inputs.item(q, qq, n), "term": float(tp[i]),
              "term_neg": float(tn[i])}
        if gp is not None:
            it.update(gender=int(gp[i]), gender_neg=int(gn[i]))
        items.append(it)
    return items


# ------------------------------------------------------------------------------------------ fitting
NEW_LAYERS = ("hf.classifier.", "adversary.")  # initialised here, trained at the head learning rate


def fit(model, items: list[dict], inputs: _Inputs, *, epochs: int, batch_size: int, learning_rate: float,
        head_learning_rate: float, warmup: float, seed: int, device: str) -> dict:
    """Train ``model`` on ``items`` (:func:`training_items`) with its objective: the encoder's trainable layers at
    ``learning_rate``, the new layers (the scoring head, the adversary) at ``head_learning_rate`` — AdamW in
    parameter groups under the Trainer's linear schedule. Returns the training log."""
    import torch
    from transformers import Trainer, TrainingArguments

    seed_everything(seed)
    device = select_device(device)
    with tempfile.TemporaryDirectory() as scratch:
        args = TrainingArguments(
            output_dir=scratch, num_train_epochs=epochs, per_device_train_batch_size=batch_size,
            learning_rate=learning_rate, warmup_steps=float(warmup), seed=seed, data_seed=seed, report_to="none",
            save_strategy="no", disable_tqdm=not progress_enabled(), use_cpu=device == "cpu",
            logging_strategy="epoch", dataloader_num_workers=0, remove_unused_columns=False, weight_decay=0.0)
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(
            [{"params": [p for n, p in params if not n.startswith(NEW_LAYERS)], "lr": learning_rate},
             {"params": [p for n, p in params if n.startswith(NEW_LAYERS)], "lr": head_learning_rate}],
            weight_decay=0.0)
        trainer = Trainer(model=model, args=args, train_dataset=_Rows(items),
                          data_collator=_collate(inputs, model.objective.objective), optimizers=(optimizer, None))
        _deterministic_log_callbacks(trainer)
        result = trainer.train()
    losses = [round(float(h["loss"]), 6) for h in trainer.state.log_history if "loss" in h]
    return {"train_loss": float(result.training_loss), "loss_per_epoch": losses}


def score(model, rows: pd.DataFrame, inputs: _Inputs, *, batch_size: int) -> np.ndarray:
    """Φ(q, d) for every ``qid, query, docid`` row (eval mode, no gradient), in row order; longest inputs first."""
    import torch

    model.eval()
    device = next(model.parameters()).device
    items = [inputs.item(q, qq, d) for q, qq, d in zip(rows["qid"], rows["query"], rows["docid"], strict=True)]
    order = np.argsort([-inputs.size(it) for it in items], kind="stable")
    out = np.zeros(len(items), np.float32)
    batches = range(0, len(order), batch_size)
    with torch.inference_mode():
        for s in progress(batches, desc="re-ranking", disable=len(batches) <= 1):
            idx = order[s:s + batch_size]
            b = inputs.pad([items[i] for i in idx])
            out[idx] = model.encode(**{k: v.to(device) for k, v in b.items()})[0].float().cpu().numpy()
    return out


def make_inputs(model_dir, bank: StateBank | None, texts: dict[str, str], max_length: int, *,
                family: str) -> _Inputs:
    from transformers import AutoTokenizer

    return _Inputs(AutoTokenizer.from_pretrained(str(model_dir)), bank, texts, max_length, family)


def rank_frame(rows: pd.DataFrame, scores: Sequence[float], ranker: str, seed: int) -> pd.DataFrame:
    """The run of one ranker: ``ranker, seed, qid, docid, score``."""
    return pd.DataFrame({"ranker": ranker, "seed": seed, "qid": rows["qid"].to_numpy(),
                         "docid": rows["docid"].to_numpy(), "score": np.asarray(scores, dtype=np.float32)})
