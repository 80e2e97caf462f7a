"""Gradient caching gives the gradient of the unchunked loss: for the encoder and for the parameters the loss uses
directly, with dropout replayed per chunk, under a scaled backward, and through the cscl model's objectives."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from biaslab.gradcache import grad_cached_loss  # noqa: E402
from biaslab.losses import cs_infonce_loss, supcon_loss  # noqa: E402


def _setup(dropout: float):
    torch.manual_seed(0)
    encoder = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Dropout(dropout), torch.nn.Tanh(),
                                  torch.nn.Linear(16, 8))
    head = torch.nn.Linear(8, 2)
    x1, x2 = torch.randn(10, 6), torch.randn(10, 6)
    y = torch.tensor([0, 1] * 5)
    a = torch.tensor([0, 0, 1, 1, 0, 1, 0, 1, 1, 0])

    def loss_fn(reps):
        feats = F.normalize(torch.stack(reps, dim=1), dim=-1)
        logits = head(reps[0])
        return (F.cross_entropy(logits, y) + supcon_loss(feats, y, temperature=0.5)
                + 2.0 * cs_infonce_loss(feats, y, a, temperature=0.5)), logits

    return encoder, head, (x1, x2), loss_fn


def _grads(*modules):
    return [p.grad.clone() for m in modules for p in m.parameters()]


def _zero(*modules):
    for m in modules:
        for p in m.parameters():
            p.grad = None


@pytest.mark.parametrize("chunk", [1, 3, 10, 64])
def test_the_gradient_is_the_unchunked_loss(chunk):
    encoder, head, (x1, x2), loss_fn = _setup(dropout=0.0)
    loss, _ = loss_fn([encoder(x1), encoder(x2)])
    loss.backward()
    want, want_loss = _grads(encoder, head), float(loss.detach())
    _zero(encoder, head)
    cached, logits = grad_cached_loss(encoder, [(x1,), (x2,)], loss_fn, chunk_size=chunk,
                                      loss_params=list(head.parameters()))
    assert not logits.requires_grad and logits.shape == (10, 2)
    assert float(cached) == pytest.approx(want_loss, rel=1e-6)
    assert all(p.grad is None for p in encoder.parameters())  # nothing moves before backward
    cached.backward()
    for g, w in zip(_grads(encoder, head), want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_dropout_is_replayed_per_chunk_and_a_scaled_backward_scales_every_gradient():
    encoder, head, (x1, x2), loss_fn = _setup(dropout=0.3)
    encoder.train()
    # reference: the same chunks encoded with a graph, in the same order, from the same random state
    torch.manual_seed(7)
    reps = [torch.cat([encoder(v[i:i + 4]) for i in range(0, 10, 4)]) for v in (x1, x2)]
    loss, _ = loss_fn(reps)
    (0.25 * loss).backward()
    want = _grads(encoder, head)
    _zero(encoder, head)
    torch.manual_seed(7)
    cached, _ = grad_cached_loss(encoder, [(x1,), (x2,)], loss_fn, chunk_size=4, loss_params=list(head.parameters()))
    after_forward = torch.get_rng_state()
    (0.25 * cached).backward()
    assert torch.equal(torch.get_rng_state(), after_forward)  # the replay leaves the random stream where it was
    for g, w in zip(_grads(encoder, head), want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_a_chunk_size_below_one_is_refused():
    encoder, _head, (x1, _x2), loss_fn = _setup(dropout=0.0)
    with pytest.raises(ValueError, match="chunk_size = 0"):
        grad_cached_loss(encoder, [(x1,)], loss_fn, chunk_size=0)
