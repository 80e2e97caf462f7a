"""intersect — "Beyond single-axis fairness: learning to detect intersectional biases" (BiasRetriever).

Modules: :mod:`prompts` (the paper's prompts, verbatim), :mod:`reference` (INDI-/SBIC-REFERENCE, §3.1.1),
:mod:`paragraphs` (intersectional paragraphs, §3.1.2), :mod:`splits` (C1–C3 partitions, §3.3).
"""
