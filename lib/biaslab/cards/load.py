"""What the bias cards measure with: the probe data of the owning papers and each checkpoint's encoder (sharing a
base encoder's frozen bottom between the checkpoints that kept it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .measure import Probes, rank_lists


def input_paths(root: Path, P) -> dict[str, Path]:
    """The processed data a card reads, by the stage that writes it (``biaslab card`` builds what is missing)."""
    root = Path(root)
    need = {"ragfair_bbq": root / "data/processed/ragfair/bbq.parquet",
            "fairrank_data": root / "data/processed/fairrank/lists.parquet"}
    need.update({f"ragcontrol_data@{t}": root / "data/processed/ragcontrol/tasks" / t / "corpus.parquet"
                 for t in P.cards.embedder_tasks})
    return need


def load_probes(root: Path, P) -> Probes:
    """The stage's probe data from the pipeline's processed data, with the owning papers' settings in ``P`` (the
    stage's typed params: ``common``, ``data``, ``ragfair``, ``fairrank``, ``cards``)."""
    from ..ragfair.cards import evaluation_setup

    root = Path(root)
    need = input_paths(root, P)
    for stage, path in need.items():
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: a bias card needs it; run `dvc repro {stage}` first")
    bbq_rows, seat_tests, card_args = evaluation_setup(pd.read_parquet(need["ragfair_bbq"]), P, root)
    fr = root / "data/processed/fairrank"
    queries = pd.read_parquet(fr / "queries.parquet")
    lists = pd.read_parquet(fr / "lists.parquet").drop(columns="fold")
    tasks_dir = root / "data/processed/ragcontrol/tasks"
    return Probes(
        bbq_rows=bbq_rows, seat_tests=seat_tests, card_args=card_args,  # as ragfair_evaluate measures its own
        embedder_tasks={t: (pd.read_parquet(tasks_dir / t / "test_questions.parquet"),
                            pd.read_parquet(tasks_dir / t / "corpus.parquet")) for t in P.cards.embedder_tasks},
        # what fairrank's rankers re-rank: each query's BM25 top-k, for the queries measured (NFaiRR's background
        # stays the whole list, as in fairrank_analysis)
        rank_lists=rank_lists(lists[(lists["rank"] <= P.fairrank.data.rerank_depth)
                                    & lists["qid"].isin(queries.loc[queries["query_set"] == P.cards.rank_query_set,
                                                                    "qid"])], pd.read_parquet(fr / "docs.parquet")),
        rank_args={"qrels": pd.read_parquet(fr / "qrels.parquet").drop(columns="fold"),
                   "terms": pd.read_parquet(fr / "terms.parquet"),
                   "query_set": P.cards.rank_query_set,
                   "qids": queries.loc[queries["query_set"] == P.cards.rank_query_set, "qid"].tolist(),
                   "background": {q: g["docid"].tolist() for q, g in lists.groupby("qid")},
                   "cutoffs": P.fairrank.eval.cutoffs, "mrr_cutoff": P.fairrank.eval.mrr_cutoff,
                   "relevance": P.fairrank.data.relevance},
        rank_measures=P.cards.rank_measures,
        perturbation={"rounds": P.ragfair.evaluate.perturbation_rounds, "cosine": P.ragfair.evaluate.perturbation_cosine,
                      "seed": P.common.seed, "acc_at_1": P.ragfair.evaluate.acc_at_1})


# per process, (base registry name, device, batch size, length) -> that base encoder's frozen bottoms, made the first
# time load_encoder loads it and kept (loading it again does not add another copy of the model and its states)
_BOTTOMS: dict[tuple, object] = {}


def load_encoder(source: str, root: Path, models_settings, *, device: str, batch_size: int, max_seq_length: int):
    """An :class:`biaslab.embed.Encoder` (cached embeddings) for a registry name or a model folder, truncating at
    ``max_seq_length`` tokens whatever length the checkpoint was saved with (``cards.max_seq_length``: every card
    is measured at one length, so a change against the base encoder is not a change of truncation).

    Work is shared between the checkpoints of one process: a base encoder (a registry name) loaded here lends its
    bottom layers to every model folder loaded after it that kept its embeddings and first layers bit for bit
    (ragfair's WiSE-FT runs train only the top ``wiseft_layers``, ragcontrol's last-k runs only the top k layers'
    MLPs). Such a checkpoint's encoder runs only its layers above that bottom, on the base's states of it, computed
    once per text for all of them (:class:`biaslab.frozen.Bottoms`): the full forward pass's vectors bit for bit,
    in a third of the time for the default cards; its layer-wise encodings (probing) run the full model."""
    from ..embed import Encoder
    from ..frozen import Bottoms
    from ..models import load_sentence_transformer, preflight

    folder = Path(source) if Path(source).is_absolute() else Path(root) / source
    model = load_sentence_transformer(folder if folder.is_dir() else preflight([source], models_settings)[source],
                                      device)
    model.max_seq_length = int(max_seq_length)
    setting = (device, int(batch_size), int(max_seq_length))
    if not folder.is_dir():
        _BOTTOMS.setdefault((source, *setting), Bottoms(model, batch_size=batch_size))
    else:
        for bottoms in (b for key, b in _BOTTOMS.items() if key[1:] == setting):
            shared = bottoms.encoder(model)
            if shared is not None:
                return shared
    return Encoder(model, device=device, batch_size=batch_size)
