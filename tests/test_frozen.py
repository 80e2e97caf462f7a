"""Shared frozen bottom layers (biaslab.frozen): running a model's top layers on the base's cached states gives the
full forward pass's embeddings, and a model whose bottom differs is refused."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from biaslab import frozen
from biaslab.embed import Encoder, tokens
from biaslab.frozen import shared_bottom_encoder
from biaslab.ragcontrol import finetune

from conftest import PARAMS, model_dir

pytestmark = pytest.mark.slow

TEXTS = ["The nurse said she would be late.", "A short one.", "  Leading and trailing spaces are stripped.  ",
         "word " * 200, "The engineer fixed the bridge before the storm reached the coast."]


def _last2_model(base, seed: int):
    """A copy of ``base`` whose trainable part under the public code's freeze_layers=2 (the last two layers' MLPs)
    is perturbed, as training would change it."""
    model = copy.deepcopy(base)
    finetune.freeze_partial(model, 2)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn(p.shape, generator=gen))
    return model


def test_top_layers_on_shared_states_equal_the_full_forward(minilm):
    base = copy.deepcopy(minilm)
    base.max_seq_length = 32  # long texts are truncated the same way both ways
    tuned = _last2_model(base, seed=0)
    bottom = frozen.FrozenBottom(base, 4, batch_size=2)
    full = Encoder(tuned, device="cpu", batch_size=2, cache=False).encode(TEXTS)
    fast = shared_bottom_encoder(bottom, tuned, batch_size=PARAMS.common.batch_size)
    fast.cache = None  # measure the computation, not the store
    got = fast.encode(TEXTS)
    np.testing.assert_array_equal(got, full)  # the same batches as Encoder's (equal lengths, filled): the same bits
    assert not np.allclose(full, Encoder(base, device="cpu", batch_size=2, cache=False).encode(TEXTS), atol=1e-3)
    assert fast.fingerprint == Encoder(tuned, device="cpu", batch_size=2, cache=False).fingerprint  # one store entry
    assert len(bottom._states) == len(set(TEXTS))  # each text's bottom computed once


def test_the_bottom_tokenizes_each_text_once_and_its_states_equal_the_preprocessing_path(minilm, monkeypatch):
    base = copy.deepcopy(minilm)
    base.max_seq_length = 32
    calls = []
    own = base.preprocess
    monkeypatch.setattr(base, "preprocess", lambda texts, *a, **k: calls.append(len(texts)) or own(texts, *a, **k))
    got = frozen.FrozenBottom(base, 4, batch_size=2).states(TEXTS)
    assert len(calls) == 1 and calls[0] <= 5  # read_tokens' check of its first and 4 longest texts, nothing else
    monkeypatch.setattr(tokens, "direct_tokenizer", lambda model, length: None)  # no direct path: preprocess per batch
    ref = frozen.FrozenBottom(base, 4, batch_size=2).states(TEXTS)
    assert len(calls) > 2
    assert len(got) == len(ref) == len(TEXTS)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_bottom_reads_the_callers_tokens_instead_of_tokenizing_again(minilm, monkeypatch):
    base = copy.deepcopy(minilm)
    base.max_seq_length = 32
    tuned = _last2_model(base, seed=3)
    unique = list(dict.fromkeys(TEXTS))
    read = tokens.read_tokens(tuned, unique)  # as Encoder.encode reads the top model's missing texts for the store
    full = Encoder(tuned, device="cpu", batch_size=2, cache=False).encode(unique)
    calls = []
    own = tokens.read_tokens
    monkeypatch.setattr(tokens, "read_tokens", lambda *a, **k: calls.append(1) or own(*a, **k))
    bottom = frozen.FrozenBottom(base, 4, batch_size=2)
    got = bottom.encode(tuned, unique, normalize=True, read=read)
    assert not calls  # no second tokenization of the same texts
    np.testing.assert_array_equal(got, full)
    # a later call with some texts already seen reads only the new ones, at their places in the caller's read
    more = ["A sentence the bottom has not seen yet.", unique[1]]
    again = bottom.encode(tuned, more, normalize=True, read=own(tuned, more))
    np.testing.assert_array_equal(again, Encoder(tuned, device="cpu", batch_size=2, cache=False).encode(more))


def test_a_model_that_tokenizes_otherwise_is_refused(minilm):
    base = copy.deepcopy(minilm)
    bottom = frozen.FrozenBottom(base, 4, batch_size=4)
    base.tokenizer("a call that truncates", truncation=True, max_length=3)  # per-call state is not the tokenizer
    same = copy.deepcopy(base)
    same.tokenizer("another call", padding="max_length", max_length=8)
    assert bottom.shares(same)
    other = copy.deepcopy(base)  # the same weights, one more token in the vocabulary: other ids for some texts
    other.tokenizer.add_tokens(["zzqxword"])
    assert not bottom.shares(other)
    grown = copy.deepcopy(base)
    assert bottom.shares(grown)  # its tokenizer's spec is now kept ...
    grown.tokenizer.add_tokens(["zzqxword"])
    assert not bottom.shares(grown)  # ... and read again once its vocabulary grows


def test_a_model_with_a_different_bottom_is_refused(minilm):
    base = copy.deepcopy(minilm)
    bottom = frozen.FrozenBottom(base, 4, batch_size=4)
    assert bottom.shares(_last2_model(base, seed=1))
    other = copy.deepcopy(base)
    with torch.no_grad():
        other[0].auto_model.encoder.layer[1].output.dense.bias[0] += 1e-6
    assert not bottom.shares(other)
    with pytest.raises(ValueError, match="differ from the shared frozen bottom"):
        shared_bottom_encoder(bottom, other, batch_size=4)
    longer = copy.deepcopy(base)
    longer.max_seq_length = base.max_seq_length + 1
    assert not bottom.shares(longer)
    with pytest.raises(ValueError, match="n_frozen must be between 1 and 5"):
        frozen.FrozenBottom(base, 6, batch_size=4)


def test_wise_ft_merges_of_a_last2_run_keep_the_base_bottom_exactly(tmp_path, minilm):
    base_dir = model_dir("minilm")
    tuned = _last2_model(minilm, seed=2)
    tuned.save(str(tmp_path / "ft"))
    bottom = frozen.FrozenBottom(minilm, 4, batch_size=4)
    seen = []
    for m, model in finetune.wise_models(base_dir, tmp_path / "ft", [0.3, 0.7], device="cpu"):
        assert bottom.shares(model)  # its frozen tensors kept bit for bit: it can reuse the base's states
        seen.append((m, model[0].auto_model.encoder.layer[5].output.dense.weight.detach().clone()))
    assert [m for m, _ in seen] == [0.3, 0.7] and not torch.equal(seen[0][1], seen[1][1])  # the MLPs did merge


def test_shared_depth_counts_the_bottom_layers_a_model_kept_bit_for_bit(minilm):
    base = copy.deepcopy(minilm)
    assert frozen.shared_depth(base, base) == 5  # all but the last: the most a FrozenBottom holds
    assert frozen.shared_depth(base, _last2_model(base, seed=4)) == 4  # layers 5-6's MLPs trained
    layer1 = copy.deepcopy(base)
    with torch.no_grad():
        layer1[0].auto_model.encoder.layer[1].attention.self.query.bias[0] += 1e-6
    assert frozen.shared_depth(base, layer1) == 1
    emb = copy.deepcopy(base)
    with torch.no_grad():
        emb[0].auto_model.embeddings.word_embeddings.weight[5, 0] += 1e-6
    assert frozen.shared_depth(base, emb) == 0
    longer = copy.deepcopy(base)
    longer.max_seq_length = base.max_seq_length + 1
    assert frozen.shared_depth(base, longer) == 0


def test_bottoms_give_every_model_that_kept_one_the_full_forward_vectors_from_one_bottom_pass(minilm):
    base = copy.deepcopy(minilm)
    base.max_seq_length = 32
    bottoms = frozen.Bottoms(base, batch_size=2)
    a, b = _last2_model(base, seed=5), _last2_model(base, seed=6)
    for tuned in (a, b):
        enc = bottoms.encoder(tuned)
        enc.cache = None  # measure the computation, not the store
        np.testing.assert_array_equal(enc.encode(TEXTS),
                                      Encoder(tuned, device="cpu", batch_size=2, cache=False).encode(TEXTS))
    assert list(bottoms._by_depth) == [4] and len(bottoms._by_depth[4]._states) == len(set(TEXTS))  # one bottom
    other = copy.deepcopy(base)
    with torch.no_grad():
        other[0].auto_model.embeddings.LayerNorm.bias[0] += 1e-6
    assert bottoms.encoder(other) is None  # nothing shared: the caller encodes it in full


def test_bottom_states_refuses_padded_inputs_instead_of_batching_them(minilm):
    """bottom_states batches by exact token counts; inputs padded to other counts would make an item's states
    depend on its batch-mates, so they are refused with an error that names the fix."""
    hf = minilm[0].auto_model
    tok = minilm.tokenizer
    texts = ["a short one", "a rather longer text than the other"]
    read = frozen.tokenized(tok, texts, max_length=32)
    good = frozen.bottom_states(hf, lambda idx: tokens.read_inputs(read, idx), read.lengths, n_frozen=2,
                                batch_size=4)
    assert [len(s) for s in good] == read.lengths.tolist()
    with pytest.raises(ValueError, match="exact token count"):
        frozen.bottom_states(hf, lambda idx: tok([texts[i] for i in idx], padding="max_length", max_length=32,
                                                 return_tensors="pt"), read.lengths, n_frozen=2, batch_size=4)
    assert frozen.bottom_states(hf, lambda idx: {}, [], n_frozen=2, batch_size=4) == []
