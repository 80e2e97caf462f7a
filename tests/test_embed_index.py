import numpy as np
import pytest

from biaslab.embed import EmbeddingCache, Encoder, fingerprint
from biaslab.index import DenseIndex
from biaslab.usage import STATS_ENV, usage_summary

TEXTS = ["The nurse was kind.", "The engineer fixed it.", "The nurse was kind.", "A cat sat on the mat."]


def test_encode_shapes_order_and_norm(minilm, tmp_path):
    enc = Encoder(minilm, device="cpu", batch_size=64, cache_root=tmp_path)
    v = enc.encode(TEXTS)
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(v[0], v[2])
    bare = minilm.encode(TEXTS[:2], convert_to_numpy=True, normalize_embeddings=True)
    np.testing.assert_allclose(v[:2], bare, atol=1e-5)
    assert enc.encode([]).shape == (0, 384)


def test_each_text_is_embedded_once(minilm, tmp_path, monkeypatch):
    enc = Encoder(minilm, device="cpu", batch_size=64, cache_root=tmp_path)
    calls = []
    real = enc._encode
    monkeypatch.setattr(enc, "_encode", lambda texts, sp: calls.append(list(texts)) or real(texts, sp))
    first = enc.encode(TEXTS)
    assert calls == [["The nurse was kind.", "The engineer fixed it.", "A cat sat on the mat."]]
    second = Encoder(minilm, device="cpu", batch_size=64, cache_root=tmp_path)  # a new process would see the same cache
    monkeypatch.setattr(second, "_encode", lambda *a: pytest.fail("cache miss on a cached text"))
    np.testing.assert_array_equal(second.encode(TEXTS), first)
    enc.encode(["A new sentence.", "A cat sat on the mat."])
    assert calls[-1] == ["A new sentence."]


def test_cache_use_is_logged_only_when_asked(minilm, tmp_path, monkeypatch):
    log = tmp_path / "usage.jsonl"
    enc = Encoder(minilm, device="cpu", batch_size=64, cache_root=tmp_path)
    enc.encode(TEXTS[:2])  # not logged: the variable is unset
    assert not log.exists()
    monkeypatch.setenv(STATS_ENV, str(log))
    enc.encode(TEXTS)  # 4 texts, 3 distinct, 2 of them cached
    enc.encode(["A new sentence."])
    u = usage_summary(log)
    assert (u["texts"], u["unique"], u["hits"], u["encoded"]) == (5, 4, 2, 2) and u["hit_rate"] == 0.5
    assert list(u["models"]) == [enc.name]
    assert usage_summary(tmp_path / "none.jsonl")["hit_rate"] is None


def test_fingerprint_changes_with_the_weights(minilm):
    import copy

    import torch

    fp = fingerprint(minilm)
    assert fp == fingerprint(minilm)
    other = copy.deepcopy(minilm)
    with torch.no_grad():
        next(other.parameters()).add_(1e-3)
    assert fingerprint(other) != fp
    assert fingerprint(minilm, normalize=False) != fp


def test_cache_store_roundtrip(tmp_path):
    c = EmbeddingCache("f" * 64, tmp_path)
    keys = [i.to_bytes(16, "big") for i in range(1000)]
    vecs = np.random.default_rng(0).normal(size=(1000, 8)).astype(np.float32)
    c.put(keys, vecs)
    got = c.get(keys)
    assert len(c) == 1000 and np.array_equal(got[keys[999]], vecs[999])


def test_dense_index_is_exact_cosine_top_k():
    rng = np.random.default_rng(0)
    docs, queries = rng.normal(size=(500, 32)), rng.normal(size=(20, 32))
    scores, ids = DenseIndex(docs).search(queries, 5)
    dn = docs / np.linalg.norm(docs, axis=1, keepdims=True)
    qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    sims = qn @ dn.T
    expected = np.argsort(-sims, axis=1)[:, :5]
    np.testing.assert_array_equal(ids, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(sims, expected, 1), atol=1e-5)
    assert not DenseIndex(docs).on_gpu


def test_dense_index_edges():
    idx = DenseIndex(np.eye(3))
    s, i = idx.search(np.eye(3)[:1], 10)  # k larger than the index is clamped
    assert i.shape == (1, 3) and i[0, 0] == 0 and s[0, 0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="dimension"):
        idx.search(np.ones((1, 4)), 1)
    with pytest.raises(ValueError, match="2-d"):
        DenseIndex(np.ones(3))
