"""Exact dense search with FAISS: inner product over L2-normalised vectors (= cosine similarity).

At the project's corpus sizes (thousands to a few hundred thousand vectors) ``IndexFlatIP`` is exact and the
fastest to build. With faiss-gpu installed and a GPU visible, the index moves to the GPU; otherwise the
CPU index is used — same results, same API.
"""

from __future__ import annotations

import numpy as np


def _as_matrix(x, normalize: bool) -> np.ndarray:
    import faiss

    m = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if m.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {m.shape}")
    if normalize:
        m = m.copy()
        faiss.normalize_L2(m)
    return m


def gpu_available() -> bool:
    import faiss

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


class DenseIndex:
    """``DenseIndex(vectors).search(queries, k) -> (scores, ids)``, both shaped (n_queries, k).

    Ids are row numbers of ``vectors``; scores are cosine similarities when ``normalize`` (default)."""

    def __init__(self, vectors, *, normalize: bool = True, use_gpu: bool | None = None):
        import faiss

        self.normalize = normalize
        data = _as_matrix(vectors, normalize)
        self.ntotal, self.dim = data.shape
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
        scores, ids = self.index.search(q, k)
        return scores, ids

    def __len__(self) -> int:
        return self.ntotal
