"""Exact dense search: inner product over L2-normalised vectors (= cosine similarity).

At the project's corpus sizes (thousands to a few hundred thousand vectors) FAISS's ``IndexFlatIP`` is exact and the
fastest to build. With faiss-gpu installed and a GPU visible, the index moves to the GPU; otherwise the CPU index is
used — same results, same API. Where FAISS is not installed (a GPU machine's image that has torch but not FAISS),
the search is the same exact product with ``torch.topk``, on the GPU when there is one: the same neighbours, with
scores equal to float32 rounding (a test compares the two backends).
"""

from __future__ import annotations

import importlib.util

import numpy as np


def _faiss_installed() -> bool:
    return importlib.util.find_spec("faiss") is not None


def _as_matrix(x, normalize: bool) -> np.ndarray:
    m = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if m.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {m.shape}")
    if normalize:
        m = m.copy()
        if _faiss_installed():
            import faiss

            faiss.normalize_L2(m)
        else:
            m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), np.finfo(np.float32).tiny)
    return m


def gpu_available() -> bool:
    if not _faiss_installed():
        return False
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


class DenseIndex:
    """``DenseIndex(vectors).search(queries, k) -> (scores, ids)``, both shaped (n_queries, k).

    Ids are row numbers of ``vectors``; scores are cosine similarities when ``normalize`` (default).
    ``search_backend``: ``faiss`` or ``torch`` (exact ``torch.topk``, on CUDA when available); None takes FAISS when
    it is installed."""

    def __init__(self, vectors, *, normalize: bool = True, use_gpu: bool | None = None,
                 search_backend: str | None = None):
        backend = search_backend or ("faiss" if _faiss_installed() else "torch")
        if backend not in ("faiss", "torch"):
            raise ValueError(f"unknown search backend {backend!r}: use faiss or torch")
        self.normalize, self.backend = normalize, backend
        data = _as_matrix(vectors, normalize)
        self.ntotal, self.dim = data.shape
        if backend == "torch":
            import torch

            self.on_gpu = torch.cuda.is_available() if use_gpu is None else bool(use_gpu)
            self.index = torch.from_numpy(data).to("cuda" if self.on_gpu else "cpu")
            return
        import faiss

        index = faiss.IndexFlatIP(self.dim)
        self.on_gpu = gpu_available() if use_gpu is None else bool(use_gpu)
        if self.on_gpu:  # pragma: no cover - needs faiss-gpu and a GPU
            self._res = faiss.StandardGpuResources()
            index = faiss.index_cpu_to_gpu(self._res, 0, index)
        index.add(data)
        self.index = index

    def search(self, queries, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = _as_matrix(queries, self.normalize)
        if q.shape[1] != self.dim:
            raise ValueError(f"query dimension {q.shape[1]} does not match the index dimension {self.dim}")
        k = min(int(k), self.ntotal)
        if k <= 0 or len(q) == 0:
            return np.zeros((len(q), 0), np.float32), np.zeros((len(q), 0), np.int64)
        if self.backend == "torch":
            import torch

            scores, ids = torch.topk(torch.from_numpy(q).to(self.index.device) @ self.index.T, k, dim=1)
            return scores.cpu().numpy(), ids.cpu().numpy().astype(np.int64)
        scores, ids = self.index.search(q, k)
        return scores, ids

    def __len__(self) -> int:
        return self.ntotal
