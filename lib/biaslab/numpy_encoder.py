"""A BERT sentence encoder in NumPy: the warm path of ``biaslab detect`` without importing torch.

``biaslab detect`` answers a few texts against a reference index saved on disk (:mod:`biaslab.detect_cache`). With
torch, transformers and sentence-transformers, a call spends 7-11 s importing them (2 s for torch alone on this
project's 2-core CPU) to embed a handful of sentences; this module embeds them in well under a second. It is written
by hand because no maintained library runs a sentence-transformers BERT without torch short of exporting the model to
ONNX first (ONNX Runtime plus an export step and two more dependencies for one command's start-up time).

It covers the family the pipeline trains and ships: a sentence-transformers folder whose ``modules.json`` is
Transformer -> mean Pooling (-> Normalize), a ``bert`` ``config.json`` with absolute positions and exact GELU, and
``model.safetensors``. :func:`supported` says whether a folder is one; anything else takes the torch path. The
forward pass is BERT's (Devlin et al. 2019, §3): embeddings + LayerNorm, then per layer multi-head self-attention and a
GELU feed-forward, each with a residual and LayerNorm; the sentence vector is the mean of the token vectors,
L2-normalised. ``tests/test_numpy_encoder.py`` checks it against :class:`biaslab.embed.Encoder` to 1e-5.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_PARTS = ("Transformer", "Pooling", "Normalize")


def supported(folder: str | Path) -> str | None:
    """``None`` when :class:`NumpyBert` can run the folder, else the reason it cannot."""
    folder = Path(folder)
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]
        config = json.loads((folder / "config.json").read_text())
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"not a sentence-transformers folder ({exc})"
    if modules not in (list(_PARTS[:2]), list(_PARTS)):
        return f"modules {modules}: only Transformer, Pooling (, Normalize)"
    if pooling.get("pooling_mode", "mean" if pooling.get("pooling_mode_mean_tokens") else None) != "mean":
        return "pooling is not mean pooling"
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu" \
            or config.get("position_embedding_type", "absolute") != "absolute":
        return "not a BERT with absolute positions and exact GELU"
    if not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file():
        return "no model.safetensors or tokenizer.json"
    return None


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class NumpyBert:
    """``NumpyBert(folder, max_seq_length).encode(texts)`` -> float32 (n, dim), L2-normalised rows, as
    ``Encoder(folder).encode`` gives them. ``max_seq_length``: the sentence-transformers model's, which the saved
    reference index records."""

    def __init__(self, folder: str | Path, max_seq_length: int):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        if (why := supported(folder)) is not None:
            raise ValueError(f"{folder}: {why}")
        config = json.loads((folder / "config.json").read_text())
        weights = load_file(folder / "model.safetensors")
        word = next(k for k in weights if k.endswith("embeddings.word_embeddings.weight"))
        prefix = word[: -len("embeddings.word_embeddings.weight")]
        self.w = {k[len(prefix):]: v.astype(np.float32) for k, v in weights.items() if k.startswith(prefix)}
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=int(max_seq_length))
        self.tokenizer.no_padding()

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        return _layer_norm(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps)

    def _tokens(self, ids: np.ndarray, types: np.ndarray) -> np.ndarray:
        """Token vectors of one text (no padding, so no mask): (tokens, dim)."""
        from scipy.special import erf

        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:len(ids)]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = self._norm(x, "embeddings.LayerNorm")
        n, dim = x.shape
        head = dim // self.heads
        for i in range(self.layers):
            L = f"encoder.layer.{i}"
            q, k, v = (self._linear(x, f"{L}.attention.self.{p}").reshape(n, self.heads, head).transpose(1, 0, 2)
                       for p in ("query", "key", "value"))
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(head)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            x = self._norm(x + self._linear(context.transpose(1, 0, 2).reshape(n, dim), f"{L}.attention.output.dense"),
                           f"{L}.attention.output.LayerNorm")
            hidden = self._linear(x, f"{L}.intermediate.dense")
            hidden = 0.5 * hidden * (1.0 + erf(hidden / np.sqrt(2.0)))
            x = self._norm(x + self._linear(hidden, f"{L}.output.dense"), f"{L}.output.LayerNorm")
        return x

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for enc in self.tokenizer.encode_batch([str(t) for t in texts]):
            vec = self._tokens(np.asarray(enc.ids), np.asarray(enc.type_ids)).mean(0)
            out.append(vec / max(np.linalg.norm(vec), 1e-12))
        return np.asarray(out, np.float32).reshape(len(out), -1)
