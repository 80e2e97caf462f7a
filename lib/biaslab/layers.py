"""Small neural-network pieces shared by the papers' models."""

from __future__ import annotations


def grad_reverse():
    """The gradient-reversal layer (Ganin & Lempitsky 2015) as a function: identity forward, negated gradient
    backward — the adversaries of cscl's adversarial baselines and of fairrank's AdvBERT train through it."""
    import torch

    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return -grad

    return GradReverse.apply
