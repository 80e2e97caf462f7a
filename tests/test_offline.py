"""With every non-loopback connection blocked, the offline paths work end to end: model registry, encoding,
the rule-based LLM, fetch from a mirror and a SEAT audit. (The local SmolLM2 backend is exercised under the
same guard in test_llm.py, the whole DVC pipeline under a process-wide guard in test_integration.py.)"""

from biaslab import models
from biaslab.data import seat as seat_data
from biaslab.data.fetch import fetch
from biaslab.embed import Encoder
from biaslab.llm import make
from biaslab.ragfair.seat_audit import run_seat_tests
from test_fetch import manifest_for

import fixtures
from conftest import GREEDY, PARAMS


def test_offline_paths_never_touch_the_network(no_network, tmp_path):
    path = models.preflight(["minilm"], PARAMS.models)["minilm"]
    assert path.is_dir()
    enc = Encoder(path, device="cpu", batch_size=PARAMS.common.batch_size, cache_root=tmp_path)
    assert enc.encode(["offline sentence"]).shape == (1, 384)

    llm = make("rules", model=PARAMS.llm.model, model_dir=None, cache=True, device="cpu")
    assert llm.generate(["x"], GREEDY, task="echo", inputs=[{"text": "kept"}]) == ["kept"]

    mirror = fixtures.write_all(tmp_path / "mirror")
    fetch(["seat"], tmp_path / "raw", mirror=mirror, manifest=manifest_for(mirror, "seat"), allow_online=False,
          progress=False)
    S = PARAMS.ragfair.seat
    table = run_seat_tests(seat_data.load_tests(None, tmp_path / "raw"), enc, n_samples=200, exact_limit=S.exact_limit,
                           e_max=S.e_max, alpha=S.alpha, seed=1)
    assert len(table) == 2 and table["p_method"].tolist() == ["exact", "exact"]
    assert no_network == []
