"""fairrank — fairness-regularised neural rankers (Seyedsalehi, Zihayat & Bagheri): document bias terms
(:mod:`.bias`), the penalty / reward ranking losses (:mod:`.losses`), cross-encoder re-rankers and the LWS / AdvBERT
baselines (:mod:`.train`), ARaB / NFaiRR / MRR per query (:mod:`.metrics`) and the tables, figures and claims
(:mod:`.findings`). MS MARCO-format readers: :mod:`biaslab.data.msmarco`."""
