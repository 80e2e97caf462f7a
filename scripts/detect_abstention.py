"""How often `biaslab detect` abstains on neutral text and on the paper's own paragraphs.

    python scripts/detect_abstention.py [--model minilm] [--corpus indic] [--n 500]

The floor is chosen on the corpus's validation paragraphs (intersect.detect.abstain_quantile); it is then applied to
``--n`` neutral WikiText-2 *test* sentences (sampled with the project seed) and to the test paragraphs, neither of
which chose it. Needs the corpus's reference, paragraphs and splits (dvc repro intersect_splits@CORPUS
intersect_reference@CORPUS) and data/raw/wikitext2_valid_test.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from biaslab import config, models
from biaslab.data import wikitext
from biaslab.embed import Encoder
from biaslab.intersect.detect import Detector, abstain_floor, validation_texts
from biaslab.paths import repo_root, resolve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--corpus", default="indic")
    ap.add_argument("--n", type=int, default=500)
    args = ap.parse_args()
    P = config.load_params()
    E, root = P.intersect.evaluate, repo_root()
    base = root / "data/processed/intersect" / args.corpus
    folder = models.preflight([args.model], P.models)[args.model]
    det = Detector(Encoder(folder, device=P.common.device, batch_size=P.common.batch_size),
                   pd.read_parquet(base / "reference.parquet"))
    splits = pd.read_parquet(base / "splits.parquet")
    paragraphs = pd.read_parquet(base / "paragraphs.parquet")
    floor = abstain_floor(det, validation_texts(splits, paragraphs), P.intersect.detect.abstain_quantile)
    test_ids = splits.loc[splits["test_all"], "paragraph_id"].drop_duplicates()
    test = paragraphs.set_index("paragraph_id").loc[test_ids, "text"].tolist()
    sentences = wikitext.load_sentences(("test",), resolve(P.data.raw_dir), min_words=8)["sentence"].tolist()
    rng = np.random.default_rng(P.common.seed)
    neutral = [sentences[i] for i in sorted(rng.choice(len(sentences), args.n, replace=False))]
    k = E.k if isinstance(E.k, int) else 3
    agg = {"method": E.aggregation, "threshold": E.threshold, "top_m": E.top_m, "weighted": E.weighted}
    for name, texts in ((f"{args.n} WikiText-2 test sentences (neutral)", neutral),
                        (f"{len(test)} test paragraphs ({args.corpus})", test)):
        plain = np.mean([r.labels == ["unbiased"] for r in det.detect(texts, k=k, **agg)])
        res = det.detect(texts, k=k, min_similarity=floor, **agg)
        print(f"{name}: labelled unbiased {plain:.3f} without abstention, {np.mean([r.labels == ['unbiased'] for r in res]):.3f} "
              f"with the floor {floor:.3f} (abstained {np.mean([r.abstained for r in res]):.3f}); k = {k}")


if __name__ == "__main__":
    main()
