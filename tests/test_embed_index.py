import dataclasses

import numpy as np
import pytest

from biaslab import embed
from biaslab.embed import Encoder, batching, fingerprint, tokens
from biaslab.embed import cache as store
from biaslab.embed.batching import (
    BIG_ROWS,
    PROBE_ROWS,
    batch_plan,
    filled,
    length_batches,
    linear_shapes,
    row_independent,
)
from biaslab.embed.cache import EmbeddingCache
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
    monkeypatch.setattr(enc, "_encode", lambda texts, sp, n=None: calls.append(list(texts)) or real(texts, sp, n))
    first = enc.encode(TEXTS)
    assert calls == [["The nurse was kind.", "The engineer fixed it.", "A cat sat on the mat."]]
    second = Encoder(minilm, device="cpu", batch_size=64, cache_root=tmp_path)  # a new process would see the same cache
    monkeypatch.setattr(second, "_encode", lambda *a: pytest.fail("cache miss on a cached text"))
    np.testing.assert_array_equal(second.encode(TEXTS), first)
    enc.encode(["A new sentence.", "A cat sat on the mat."])
    assert calls[-1] == ["A new sentence."]


def test_a_text_no_length_cuts_is_stored_once_for_every_length_and_a_cut_text_per_length(minilm, tmp_path,
                                                                                          monkeypatch):
    # the base encoder at 256 tokens (ragfair's stages) and at 16 (here: a length that cuts the long text) share
    # the short texts' vectors, bit for bit, and keep the long text's two vectors apart
    import copy

    model = copy.deepcopy(minilm)
    long = "The engineer who fixed the old bridge over the river last winter " * 6
    texts = [*TEXTS, long]
    model.max_seq_length = 256
    at_256 = Encoder(model, device="cpu", batch_size=64, cache_root=tmp_path).encode(texts)
    model.max_seq_length = 16
    bare = Encoder(model, device="cpu", batch_size=64, cache=False).encode(texts)
    enc = Encoder(model, device="cpu", batch_size=64, cache_root=tmp_path)
    calls = []
    real = enc._encode
    monkeypatch.setattr(enc, "_encode", lambda t, sp, n=None: calls.append(list(t)) or real(t, sp, n))
    at_16 = enc.encode(texts)
    assert calls == [[long]]  # only the text that 16 tokens cut is encoded again
    np.testing.assert_array_equal(at_16, bare)  # a shared vector is the one this length computes
    np.testing.assert_array_equal(at_16[:4], at_256[:4])
    assert not np.array_equal(at_16[4], at_256[4])
    assert model.max_seq_length == 16  # the keys' token count leaves the model's length as it was
    assert list(tokens.read_lengths(model, [long, TEXTS[0]])) == [17, 7]  # one above the length: cut
    calls.clear()
    model.max_seq_length = 256  # back at 256: every vector stored, the long text's under its whole-text key
    assert np.array_equal(enc.encode(texts), at_256) and calls == []
    hits, missing = store.cached(enc.cache, model, [long, "never seen"])
    assert missing == ["never seen"] and np.array_equal(hits[long], at_256[4])
    assert enc.fingerprint == Encoder(minilm, device="cpu", batch_size=64, cache=False).fingerprint


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


def test_length_batches_never_mix_token_counts():
    lengths = [5, 9, 5, 9, 9, 2, 5, 9]
    batches = length_batches(lengths, 2)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 7], [0, 2], [6], [5]]  # longest first, input order
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len({lengths[i] for i in b}) == 1 and len(b) <= 2 for b in batches)
    assert length_batches([], 4) == []
    with pytest.raises(ValueError, match="batch_size"):
        length_batches([3], 0)


def test_a_vector_does_not_depend_on_the_texts_beside_it(minilm):
    """The store keeps the first vector of a text, so a stage's bytes would depend on what the store already held
    if a text's vector depended on its batch companions (padding changes the summation order by ~1e-7)."""
    short = "The nurse was kind."
    long = ("The engineer who fixed the bridge over the river last winter was praised by everyone in the town, "
            "and the mayor gave a long speech about her careful work and the many nights she spent on it.")
    enc = Encoder(minilm, device="cpu", batch_size=64, cache=False)
    alone = enc.encode([short])
    np.testing.assert_array_equal(enc.encode([long, short, "A cat."])[1], alone[0])
    layers = enc.encode_layers([short])
    np.testing.assert_array_equal(enc.encode_layers([long, short])[1], layers[0])
    bare = minilm.encode([long, short], convert_to_numpy=True, normalize_embeddings=True)  # padded batch
    np.testing.assert_allclose(bare[1], alone[0], atol=1e-6)  # the same model, up to the padding's rounding


def test_a_short_text_alone_gets_the_vector_it_gets_beside_texts_of_its_own_length(minilm):
    """A batch of a few short texts is few matrix rows, where the BLAS takes another kernel (a text alone differed by
    up to 3e-7 before batches were filled to row-independent products; benchmarks/bench_batching.py)."""
    enc = Encoder(minilm, device="cpu", batch_size=64, cache=False)
    pool = [f"The {w} was kind." for w in ("nurse", "doctor", "teacher", "farmer", "pilot", "baker", "judge", "cook",
                                          "chef", "clerk", "guard", "miner", "poet", "tailor", "singer", "driver")]
    lengths = enc._token_lengths(pool)
    same = [t for t, n in zip(pool, lengths, strict=True) if n == lengths[0]]
    assert len(same) >= 8  # one length group: no padding either way
    together = enc.encode(same)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(enc.encode(same[:k]), together[:k])
    np.testing.assert_array_equal(enc.encode_layers(same[:1])[0], enc.encode_layers(same)[0])
    unfilled = minilm.encode(same[:1], convert_to_numpy=True, normalize_embeddings=True)[0]  # 7 rows, unfilled
    np.testing.assert_allclose(unfilled, together[0], atol=1e-6)  # the same model, up to the kernel's rounding


def test_the_row_probe_holds_above_its_range_and_is_measured_once_per_machine(minilm, monkeypatch):
    """row_independent measures products of 1 to PROBE_ROWS rows on this machine and takes larger ones as
    row-independent: checked here for MiniLM's layer shapes up to BIG_ROWS rows. The measurement is kept on disk."""
    import torch

    shapes = linear_shapes(minilm)
    assert (384, 1536) in shapes and (1536, 384) in shapes  # (out, in): feed-forward in and out
    safe = row_independent(shapes, "cpu")
    assert safe.shape == (PROBE_ROWS + 1,) and not safe[0] and safe[PROBE_ROWS]
    gen = torch.Generator().manual_seed(1)
    for out_dim, in_dim in shapes:
        x, w = torch.randn(BIG_ROWS, in_dim, generator=gen), torch.randn(out_dim, in_dim, generator=gen)
        with torch.inference_mode():
            big = torch.nn.functional.linear(x, w)
            for r in (PROBE_ROWS + 1, 640, 1000, 2048, 3001, BIG_ROWS - 1):
                assert torch.equal(torch.nn.functional.linear(x[:r], w), big[:r]), (in_dim, out_dim, r)
    monkeypatch.setattr(batching, "_ROW_INDEPENDENT", {})
    monkeypatch.setattr(batching, "_probe_rows", lambda *a: pytest.fail("measured again instead of read from disk"))
    np.testing.assert_array_equal(row_independent(shapes, "cpu"), safe)


def test_a_batch_is_filled_to_the_fewest_row_independent_rows_with_its_own_texts():
    safe = np.arange(PROBE_ROWS + 1) >= 16  # one CPU: every product of 16 rows or more
    idx = np.array([4, 7])
    assert filled(idx, 5, safe).tolist() == [4, 7, 4, 7]  # 4 texts x 5 tokens = 20 rows >= 16
    assert filled(idx, 3, safe).tolist() == [4, 7, 4, 7, 4, 7]
    assert filled(idx, 8, safe) is idx and filled(np.array([9]), 40, safe).tolist() == [9]
    holes = safe & ~((np.arange(PROBE_ROWS + 1) >= 57) & (np.arange(PROBE_ROWS + 1) <= 192))  # another: 57-192 too
    assert filled(idx, 20, holes) is idx  # 40 rows
    assert len(filled(idx, 30, holes)) == 7  # 60 rows are not row-independent there: 7 x 30 = 210 are
    assert filled(np.arange(3), 600, np.zeros(PROBE_ROWS + 1, bool)).tolist() == [0, 1, 2]  # beyond the probe
    assert len(filled(np.array([1]), 100, np.zeros(PROBE_ROWS + 1, bool))) == 6  # 600 rows > PROBE_ROWS
    lengths = [128] * 70 + [10] * 70
    batches = length_batches(lengths, 64, max_tokens=4096)
    assert [len(b) for b in batches] == [24, 23, 23, 35, 35]  # 128-token texts: at most 32 a batch; 10: at most 64
    assert length_batches([5000], 64, max_tokens=4096)[0].tolist() == [0]  # never fewer than one text


def test_the_batch_plan_is_equal_length_capped_batches_each_with_its_filled_run():
    lengths = [3, 128, 3, 128, 128, 7]
    safe = np.arange(PROBE_ROWS + 1) >= 16
    plan = batch_plan(lengths, 2, safe)
    assert [b.tolist() for b, _ in plan] == [[1, 3], [4], [5], [0, 2]]  # longest first, input order within a length
    assert [r.tolist() for _, r in plan] == [[1, 3], [4], [5, 5, 5], [0, 2, 0, 2, 0, 2]]  # >= 16 rows
    assert batch_plan([], 4, safe) == []


def test_token_lengths_are_the_same_computed_a_chunk_at_a_time(minilm):
    enc = Encoder(minilm, device="cpu", batch_size=64, cache=False)
    texts = ["A cat.", "The nurse was kind to everyone.", "Hi", "The engineer fixed the long bridge in winter."]
    whole = enc._token_lengths(texts)
    assert len(set(whole.tolist())) == 4
    np.testing.assert_array_equal(enc._token_lengths(texts, chunk=3), whole)
    assert enc._token_lengths([]).shape == (0,)


def test_one_tokenization_gives_the_counts_and_the_ids_the_models_own_preprocessing_gives(minilm, monkeypatch):
    import copy

    model = copy.deepcopy(minilm)
    model.max_seq_length = 16
    long = "The engineer who fixed the old bridge over the river last winter " * 3
    texts = ["A cat.", long, "", "Ünïcode café — naïve résumé.", "The nurse was kind to everyone."]
    read = tokens.read_tokens(model, texts)
    np.testing.assert_array_equal(read.counts, tokens.read_lengths(model, texts))  # 17 for the cut text
    np.testing.assert_array_equal(read.lengths, np.minimum(read.counts, 16))
    ref = model.preprocess(texts)
    for i, n in enumerate(read.lengths):
        np.testing.assert_array_equal(read.ids[i], ref["input_ids"][i, :n].numpy())
        np.testing.assert_array_equal(read.types[i], ref["token_type_ids"][i, :n].numpy())
    assert tokens.read_tokens(model, []).ids is None
    monkeypatch.setattr(tokens, "READ_CHUNK", 2)  # a few texts per tokenizer call: the same counts and ids
    chunked = tokens.read_tokens(model, texts)
    np.testing.assert_array_equal(chunked.counts, read.counts)
    assert all(np.array_equal(a, b) for a, b in zip(chunked.ids, read.ids, strict=True))


def test_vectors_from_the_ids_are_the_bits_the_encode_path_gives_and_a_mismatch_falls_back(minilm, monkeypatch):
    texts = ["A cat.", "The nurse was kind to everyone.", "Hi", "The engineer fixed it " * 80, "The nurse was kind."]  # 401 tokens: cut
    enc = Encoder(minilm, device="cpu", batch_size=64, cache=False)
    direct = enc.encode(texts)
    layers = enc.encode_layers(texts)
    real = tokens.read_tokens
    counts_only = lambda m, t: tokens.Read(*dataclasses.astuple(real(m, t))[:2])  # noqa: E731
    monkeypatch.setattr(tokens, "read_tokens", counts_only)
    monkeypatch.setattr(embed, "read_tokens", counts_only)  # what the encoder calls
    assert tokens.read_tokens(minilm, texts).ids is None
    np.testing.assert_array_equal(enc.encode(texts), direct)  # through SentenceTransformer.encode
    np.testing.assert_array_equal(enc.encode_layers(texts), layers)  # through the tokenizer's own call
    monkeypatch.undo()
    # a backend that reads other ids than the model's preprocessing (here: one token fewer) is not used
    wrong = tokens.direct_tokenizer(minilm, minilm.max_seq_length - 1)
    monkeypatch.setattr(tokens, "direct_tokenizer", lambda m, n: wrong)
    assert tokens.read_tokens(minilm, texts).ids is None
    np.testing.assert_array_equal(enc.encode(texts), direct)


def test_the_direct_path_leaves_out_a_model_with_a_prompt(minilm):
    import copy

    model = copy.deepcopy(minilm)
    model.prompts = {"query": "query: "}
    model.default_prompt_name = "query"
    assert tokens.direct_tokenizer(model, 128) is None and tokens.read_tokens(model, ["A cat."]).ids is None
    assert tokens.direct_tokenizer(minilm, 128) is tokens.direct_tokenizer(minilm, 128)  # one copy per length


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
    assert fingerprint(minilm, scheme="another batching") != fp  # vectors computed another way are not reused
    short = copy.deepcopy(minilm)
    short.max_seq_length = 16
    assert fingerprint(short) != fp  # the length is in the fingerprint unless the keys carry it
    assert fingerprint(short, truncation=False) == fingerprint(minilm, truncation=False)


def test_cache_store_roundtrip(tmp_path):
    c = EmbeddingCache("f" * 64, tmp_path)
    keys = [i.to_bytes(16, "big") for i in range(1000)]
    vecs = np.random.default_rng(0).normal(size=(1000, 8)).astype(np.float32)
    c.put(keys, range(1000), vecs)
    got = c.get(keys)
    assert len(c) == 1000 and np.array_equal(got[keys[999]][1], vecs[999]) and got[keys[999]][0] == 999


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


def test_without_faiss_the_torch_search_finds_the_same_neighbours(monkeypatch):
    from biaslab import index

    rng = np.random.default_rng(1)
    docs, queries = rng.normal(size=(700, 48)), rng.normal(size=(30, 48))
    want_s, want_i = DenseIndex(docs, search_backend="faiss").search(queries, 10)
    monkeypatch.setattr(index, "_faiss_installed", lambda: False)  # a GPU image without FAISS
    idx = DenseIndex(docs)
    assert idx.backend == "torch" and not index.gpu_available()
    got_s, got_i = idx.search(queries, 10)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_allclose(got_s, want_s, atol=1e-5)
    assert got_i.dtype == np.int64 and got_s.dtype == np.float32
    _, i = idx.search(queries[:2], 1000)  # k clamped as FAISS's is
    assert i.shape == (2, 700)
    with pytest.raises(ValueError, match="search backend"):
        DenseIndex(docs, search_backend="annoy")


def test_dense_index_edges():
    idx = DenseIndex(np.eye(3))
    s, i = idx.search(np.eye(3)[:1], 10)  # k larger than the index is clamped
    assert i.shape == (1, 3) and i[0, 0] == 0 and s[0, 0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="dimension"):
        idx.search(np.ones((1, 4)), 1)
    with pytest.raises(ValueError, match="2-d"):
        DenseIndex(np.ones(3))


def test_the_direct_path_reads_a_grown_vocabulary(minilm):
    """The backend copy is made again once the tokenizer's vocabulary grows (add_tokens), so the direct path gives
    the new token's id, as the model's own preprocessing does."""
    import copy

    model = copy.deepcopy(minilm)
    before = tokens.direct_tokenizer(model, 128)
    model.tokenizer.add_tokens(["zzqxword"])
    after = tokens.direct_tokenizer(model, 128)
    assert after is not before
    read = tokens.read_tokens(model, ["a zzqxword here"])
    assert read.ids is not None
    assert read.ids[0].tolist() == model.preprocess(["a zzqxword here"])["input_ids"][0].tolist()
    assert len(model.tokenizer) - 1 in read.ids[0].tolist()
