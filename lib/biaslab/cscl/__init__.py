"""cscl — conditional supervised contrastive learning for fair text classification (Chi et al., EMNLP Findings
2022). The losses live in :mod:`biaslab.losses` (``supcon_loss``, ``cs_infonce_loss``), the equalized-odds gaps in
:mod:`biaslab.metrics.fairness`, INLP in :mod:`.inlp`."""
