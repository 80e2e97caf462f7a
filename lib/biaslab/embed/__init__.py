"""Batched sentence embedding with an on-disk cache: each text is embedded once per model (:class:`Encoder`).

An encoder reads each missing text once (:mod:`biaslab.embed.tokens`), encodes it in a batch of equal token count filled
so that its vector does not depend on its batch (:mod:`biaslab.embed.batching`), and keeps the vector in the embedding
store under the model's :func:`fingerprint` (:mod:`biaslab.embed.cache`). The fingerprint includes the batching scheme
(``batching.ENCODING``), so vectors stored under an earlier one (padded; unfilled, before 2026-11-26; filled to a
fixed row count) are not reused.

With ``BIASLAB_EMBED_STATS=FILE`` set (the runner sets it when timings are logged), every ``encode`` call appends
one JSON line — model, texts asked for, distinct texts, cache hits — so a stage's cache hit rate can be reported
(``biaslab timings``; :mod:`biaslab.usage`). Nothing is written otherwise.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..usage import record_usage
from .batching import ENCODING, batch_plan, model_row_independent
from .cache import EmbeddingCache, cached, store
from .tokens import Read, read_inputs, read_tokens, token_lengths


def fingerprint(model, *, normalize: bool = True, scheme: str | None = None, truncation: bool = True) -> str:
    """Content hash of a ``SentenceTransformer`` (weights + output-relevant settings) and of how its outputs are
    computed: ``scheme``, the embedding store's ``ENCODING`` unless a caller that computes something else (the RAG
    reader's option scores) names its own, so a change to the batching does not invalidate what it caches. With
    ``truncation=False`` the model's ``max_seq_length`` is left out: the embedding store keys the texts that a
    length cuts by that length instead (:func:`cached`)."""
    h = hashlib.sha256()
    stack = repr(model)  # module stack with pooling and normalisation settings
    if not truncation:
        stack = re.sub(r"'max_seq_length': \w+", "'max_seq_length': *", stack)
    h.update(stack.encode())
    scheme = ENCODING if scheme is None else scheme
    cut = getattr(model, "max_seq_length", None) if truncation else "*"
    h.update(f"max_seq_length={cut};normalize={normalize};{scheme}".encode())
    for key, tensor in sorted(model.state_dict().items()):
        h.update(key.encode())
        h.update(str(tuple(tensor.shape)).encode())
        h.update(tensor.detach().to("cpu").contiguous().numpy().tobytes())
    return h.hexdigest()


class Encoder:
    """Embed texts with a sentence-transformers model, batched, cached, on the best device.

    ``model`` is a folder with weights (a logical name resolved by ``models.preflight``, or a model trained by a
    stage) or a loaded ``SentenceTransformer``; ``device`` applies when loading from a folder. ``encode`` returns
    float32 vectors in input order (L2-normalised when ``normalize``). ``cache`` switches the embedding cache (on
    in every stage; tests switch it off to measure the model itself)."""

    def __init__(self, model, *, device: str, batch_size: int, normalize: bool = True, cache: bool = True,
                 cache_root: Path | None = None):
        if isinstance(model, (str, Path)):
            from ..models import load_sentence_transformer

            self.name = Path(model).name
            model = load_sentence_transformer(model, device)
        else:
            self.name = getattr(model, "name_or_path", type(model).__name__)
        self.model = model
        self.batch_size = batch_size
        self.normalize = normalize
        self.fingerprint = fingerprint(model, normalize=normalize, truncation=False)  # lengths: in the keys
        self.cache_root = cache_root
        self.cache = EmbeddingCache(self.fingerprint, cache_root) if cache else None

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def _token_lengths(self, texts: list[str], chunk: int = 4096) -> np.ndarray:
        return token_lengths(self.model, texts, chunk)

    def _batches(self, texts: list[str], show_progress: bool | None, desc: str, read: Read | None = None):
        """(batch, filled batch) pairs: equal token counts, at most ``batch_size`` texts and ``MAX_BATCH_TOKENS``
        tokens, each filled to a row-independent product (module doc). ``read``: :func:`read_tokens` of ``texts``
        when the caller has it."""
        from ..runtime import progress

        read = read_tokens(self.model, texts) if read is None else read
        plan = batch_plan(read.lengths, self.batch_size, model_row_independent(self.model))
        yield from progress(plan, desc=desc, unit="batch", disable=not show_progress or len(plan) <= 1)

    def _inputs(self, run: np.ndarray, read: Read) -> dict:
        """:func:`read_inputs` on the model's device."""
        return {k: v.to(self.model.device) for k, v in read_inputs(read, run).items()}

    def _encode(self, texts: list[str], show_progress: bool | None, read: Read | None = None) -> np.ndarray:
        """Vectors of ``texts`` (``read``: :func:`read_tokens` of them, when the caller has it). With ids, each
        batch goes to the model as they are, as ``SentenceTransformer.encode`` would run it (eval mode, inference
        mode, the same normalisation); without, through ``encode``."""
        import torch

        read = read_tokens(self.model, texts) if read is None else read
        out = np.zeros((len(texts), self.dim), np.float32)
        batches = self._batches(texts, show_progress, "encode", read)
        if read.ids is None:
            for idx, run in batches:
                out[idx] = self.model.encode([texts[i] for i in run], batch_size=len(run), convert_to_numpy=True,
                                             normalize_embeddings=self.normalize, show_progress_bar=False)[: len(idx)]
            return out
        self.model.eval()  # as encode leaves it
        with torch.inference_mode():
            for idx, run in batches:
                vec = self.model({**self._inputs(run, read), "modality": "text"})["sentence_embedding"]
                if self.normalize:
                    vec = torch.nn.functional.normalize(vec, p=2, dim=1)
                out[idx] = vec[: len(idx)].float().cpu().numpy()
        return out

    def encode(self, texts: Sequence[str], *, show_progress: bool | None = None) -> np.ndarray:
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        if self.cache is None:
            table = dict(zip(unique, self._encode(unique, show_progress), strict=False))
            return np.stack([table[t] for t in texts])
        hits, missing = cached(self.cache, self.model, unique)
        record_usage(self.name, "pooled", len(texts), len(unique), len(unique) - len(missing))
        if missing:  # tokenized once: for the store's keys, the batch plan and the model's inputs
            read = read_tokens(self.model, missing)
            vecs = self._encode(missing, show_progress, read)
            store(self.cache, self.model, missing, vecs, read.counts)
            hits.update(zip(missing, vecs, strict=True))
        return np.stack([hits[t] for t in texts])

    @property
    def n_layers(self) -> int:
        """Hidden states the transformer returns: the embedding layer plus one per transformer layer."""
        return int(self.model[0].auto_model.config.num_hidden_layers) + 1

    def _encode_layers(self, texts: list[str], read: Read | None = None) -> np.ndarray:
        import torch

        read = read_tokens(self.model, texts) if read is None else read
        first = self.model[0]
        tok, net = first.tokenizer, first.auto_model
        device = next(net.parameters()).device
        out = np.zeros((len(texts), self.n_layers, self.dim), np.float32)
        was_training = net.training
        net.eval()
        with torch.inference_mode():
            # equal lengths: no padding (module doc)
            for idx, run in self._batches(texts, False, "encode layers", read):
                if read.ids is None:
                    enc = tok([texts[i] for i in run], padding=True, truncation=True,
                              max_length=self.model.max_seq_length, return_tensors="pt").to(device)
                else:
                    enc = self._inputs(run, read)
                hidden = torch.stack(net(**enc, output_hidden_states=True).hidden_states, 1)  # [b, L+1, t, d]
                mask = enc["attention_mask"][:, None, :, None].to(hidden.dtype)
                pooled = (hidden * mask).sum(2) / mask.sum(2).clamp(min=1.0)
                out[idx] = pooled[: len(idx)].float().cpu().numpy()
        net.train(was_training)
        return out

    def encode_layers(self, texts: Sequence[str]) -> np.ndarray:
        """Mean-pooled hidden states of every layer, ``[n_texts, n_layers, dim]`` (not normalised; index 0 is the
        embedding layer). Probing (ragfair §3.2.2) reads these; cached like :meth:`encode`, under a separate key."""
        texts = [str(t) for t in texts]
        shape = (self.n_layers, self.dim)
        if not texts:
            return np.zeros((0, *shape), np.float32)
        unique = list(dict.fromkeys(texts))
        if self.cache is None:
            table = dict(zip(unique, self._encode_layers(unique), strict=True))
            return np.stack([table[t] for t in texts])
        if not hasattr(self, "_layer_cache"):
            self._layer_cache = EmbeddingCache(self.fingerprint, self.cache_root, kind="layers")
        hits, missing = cached(self._layer_cache, self.model, unique)
        record_usage(self.name, "layers", len(texts), len(unique), len(unique) - len(missing))
        if missing:
            read = read_tokens(self.model, missing)
            vecs = self._encode_layers(missing, read)
            store(self._layer_cache, self.model, missing, vecs.reshape(len(missing), -1), read.counts)
            hits.update((t, v.reshape(-1)) for t, v in zip(missing, vecs, strict=True))
        return np.stack([hits[t].reshape(shape) for t in texts])
