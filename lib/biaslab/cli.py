"""``biaslab`` — the command line.

    biaslab run STAGE [--set name=value ...]   execute one notebook stage (as DVC does)
    biaslab fetch [DATASET ...]                put data sets under data/raw (mirror: BIASLAB_DATA_MIRROR)
    biaslab models [--check NAME ...]          list registered models and where they resolve
    biaslab params [--apply FILE]              validate params.yaml (merge e.g. configs/paper-scale.yaml)
    biaslab seat [--model M] [--tests T ...]   run the SEAT audit on a model and print the table
    biaslab detect TEXT ... [--model DIR]      intersectional bias labels + top-k evidence (intersect §5)
    biaslab timings FILE                       where stages spent their time (runs with BIASLAB_TIMINGS=FILE)
    biaslab deps [--write] [--cell STAGE]      check (or rewrite) every stage's library / data / params deps
    biaslab claims [PAPER ...] [--against REV] each paper's claims table (reports/<paper>/results/claims.csv) as
                                               Markdown: verdict counts and every claim with its interval; with
                                               --against, only what moved since git revision REV
    biaslab card MODEL [--against REF] [--json]
                                               a cross-paper bias card of one encoder (a registry name or a model
                                               folder), measured as the cards stage measures every checkpoint, and
                                               its change in bias against REF (default: the base encoder)
    biaslab sweep FILE --executor local|debug|slurm [--jobs N] [--force] [--dry-run]
                                               run the pipeline up to the sweep file's targets with the members
                                               of its fan_out stages as scheduler jobs (submitit)
"""

from __future__ import annotations

import argparse
import functools
import operator
import os
import sys
from pathlib import Path


def _cmd_run(args) -> int:
    from . import run

    argv = [args.stage, *functools.reduce(operator.iadd, (["--set", s] for s in args.set), [])]
    return run.main(argv + (["--out", str(args.out)] if args.out else []) + (["--plain"] if args.plain else []))


def _check_known(names, known: list[str], kind: str, label: str) -> None:
    """A usage error for the first of ``names`` not among ``known``, with the closest and every choice."""
    from .stages import did_you_mean

    for name in names:
        if name not in known:
            raise UsageError(f"unknown {kind} {name!r}{did_you_mean(name, known)}; {label}: {', '.join(known)}")


def _cmd_fetch(args) -> int:
    from .config import load_params
    from .data.fetch import fetch, load_manifest
    from .paths import resolve

    _check_known(args.datasets, list(load_manifest()), "data set", "known")
    p = load_params(sections=["data"])
    rows, counts = fetch(args.datasets or list(p.data.datasets), resolve(p.data.raw_dir),
                         allow_online=p.data.allow_online)
    for ds, c in counts.items():
        print(f"{ds}: " + ", ".join(f"{k}={v}" for k, v in c.items()))
    print(f"{len(rows)} files checked")
    return 0


def _cmd_models(args) -> int:
    from . import models
    from .config import load_params

    settings = load_params(sections=["models"]).models
    if args.check:
        for name, path in models.preflight([_model_name(n) for n in args.check], settings).items():
            print(f"{name}: {path}")
        return 0
    for row in models.describe(settings):
        print(f"{row['name']:<24} {row['available']:<4} {row['kind']:<21} {row['where']}")
    return 0


def _cmd_params(args) -> int:
    from .config import load_params
    from .overrides import apply_overrides
    from .paths import repo_root
    from .stages import did_you_mean

    if args.apply and not Path(args.apply).is_file():
        root = repo_root()
        profiles = sorted(str(f.relative_to(root)) for f in (root / "configs").glob("*.yaml"))
        raise UsageError(f"{args.apply} not found{did_you_mean(args.apply, profiles)}; the profiles: "
                         f"{', '.join(profiles)}")
    if args.apply:
        print(f"merged {args.apply} into {apply_overrides(args.apply)}")
    load_params()
    print("params.yaml is valid")
    return 0


def _cmd_seat(args) -> int:
    from . import models
    from .config import load_params
    from .data import seat as seat_data
    from .embed import Encoder
    from .paths import resolve
    from .ragfair.seat_audit import run_seat_tests

    p = load_params(sections=["common", "data", "models", "ragfair"])
    s = p.ragfair.seat
    name = _model_name(args.model or s.model)
    folder = models.preflight([name], p.models)[name]
    enc = Encoder(folder, device=p.common.device, batch_size=p.common.batch_size)
    tests = seat_data.load_tests(args.tests or list(s.tests) or None, resolve(p.data.raw_dir))
    table = run_seat_tests(tests, enc, n_samples=s.n_samples, exact_limit=s.exact_limit, e_max=s.e_max,
                           alpha=s.alpha, seed=p.common.seed)
    print(table[["test", "effect_size", "p_value", "p_method", "fairness_score"]].to_string(index=False))
    return 0


def _cmd_detect(args) -> int:
    import json
    from pathlib import Path

    from . import detect_cache, models, stages
    from .config import load_params
    from .paths import repo_root

    p = load_params(sections=["common", "models", "intersect"])
    texts = list(args.texts)
    if args.file:
        if not Path(args.file).is_file():
            raise UsageError(f"--file {args.file}: no such file (a text file, one paragraph per line)")
        texts += [t for t in Path(args.file).read_text(encoding="utf-8").splitlines() if t.strip()]
    if not texts:
        raise UsageError("give text(s) or --file")
    if not args.model.startswith("data/models/"):
        _model_name(args.model)  # a typo fails before anything is built
    if args.model.startswith("data/models/") and not Path(args.model).is_dir():  # a retriever the pipeline trains
        stages.build_missing([repo_root() / args.model], "detect", not args.no_build)
    model = _model_name(args.model)
    ref_path = Path(args.reference)
    floor_from = None
    if not ref_path.suffix:  # a corpus name: the pipeline's reference corpus, built here when missing
        base = repo_root() / "data/processed/intersect" / args.reference
        ref_path = base / "reference.parquet"
        stages.build_missing([ref_path], "detect", not args.no_build)
        if args.min_similarity is None and p.intersect.detect.abstain_quantile is not None:
            # the abstention floor, chosen on the corpus's validation paragraphs with this encoder (intersect.detect)
            floor_from = (base / "splits.parquet", base / "paragraphs.parquet")
            stages.build_missing(list(floor_from), "detect's abstention floor", not args.no_build)
    elif not ref_path.is_file():
        raise UsageError(f"reference corpus {ref_path} not found (a .parquet with text,label columns)")
    E = p.intersect.evaluate
    agg = {"method": E.aggregation, "threshold": E.threshold, "top_m": E.top_m, "weighted": E.weighted}
    k = args.k or E.k
    if k == "validation":  # the depth the last evaluation chose on the validation split
        chosen = repo_root() / "reports/intersect/results/metrics.json"
        if not chosen.is_file():
            raise FileNotFoundError(f"intersect.evaluate.k is 'validation' and {chosen} does not exist yet "
                                    "(run `dvc repro intersect_evaluate`); or pass --k")
        k = int(json.loads(chosen.read_text(encoding="utf-8"))["k"])
    folder = models.preflight([model], p.models)[model]
    det, floor = detect_cache.detector(folder, ref_path, device=p.common.device, batch_size=p.common.batch_size,
                                       floor_from=floor_from, quantile=p.intersect.detect.abstain_quantile)
    floor = args.min_similarity if args.min_similarity is not None else floor
    results = det.detect(texts, k=k, min_similarity=floor, **agg)
    if args.json:
        print(json.dumps([{"text": t, "labels": r.labels, "abstained": r.abstained,
                           "floor": None if floor is None else round(floor, 4), "evidence": [
            {"sentence": s, "label": lab, "similarity": round(v, 4)} for s, lab, v in r.evidence]}
            for t, r in zip(texts, results, strict=True)], indent=1, ensure_ascii=False))
        return 0
    for t, r in zip(texts, results, strict=True):
        why = (f" (abstained: best similarity {r.evidence[0][2]:.3f} < {floor:.3f}, the floor from the validation "
               "paragraphs)") if r.abstained else ""
        print(f"\n{t[:100]}{'…' if len(t) > 100 else ''}\n  predicted: {', '.join(r.labels)}{why}")
        for s, lab, v in r.evidence[: args.show]:
            print(f"  {v:6.3f}  [{lab}] {s[:90]}")
    return 0


def _cmd_timings(args) -> int:
    from .run import summarise_timings

    try:
        print(summarise_timings(args.file, cells=args.cells))
    except (FileNotFoundError, ValueError) as err:
        print(f"biaslab: {err}", file=sys.stderr)
        return 2
    return 0


def _cmd_deps(args) -> int:
    from . import deps

    return deps.main([*(["--write"] if args.write else []), *(["--cell", args.cell] if args.cell else [])])


def _cmd_claims(args) -> int:
    from .config import load_params
    from .paths import repo_root
    from .report import claims_against, claims_text

    _check_known(args.papers, load_params(sections=["report"]).report.papers, "paper", "papers")
    try:
        print(claims_text(repo_root(), args.papers) if args.against is None else
              claims_against(repo_root(), args.papers, args.against))
    except ValueError as err:  # --against names no commit, or a table is malformed (its file named)
        print(f"biaslab claims: {err}", file=sys.stderr)
        return 2
    except FileNotFoundError as err:
        print(f"biaslab claims: {err}", file=sys.stderr)
        return 1
    return 0


def _cmd_card(args) -> int:
    import json

    from . import stages
    from .cards import changes as card_changes
    from .cards import export, load, measure
    from .config import load_params
    from .io import write_json, write_text
    from .paths import repo_root

    root = repo_root()
    P = load_params(sections=["common", "data", "models", "ragfair", "fairrank", "cards"])
    model = _model_name(args.model)
    stages.build_missing(load.input_paths(root, P), "a bias card", not args.no_build)
    probes = load.load_probes(root, P)

    def card_of(source: str) -> measure.Card:
        enc = load.load_encoder(source, root, P.models, device=P.common.device, batch_size=P.common.batch_size,
                                   max_seq_length=P.cards.max_seq_length)
        return measure.encoder_card(enc, source, probes)

    card = card_of(model)
    against = P.cards.base_models[0] if args.against is None else args.against
    U = P.common.uncertainty
    changes = None
    if against.lower() != "none" and against != model:
        changes = card_changes.compare(card, model, card_of(_model_name(against)), against, rounds=U.rounds,
                                       confidence=U.confidence, seed=P.common.seed,
                                       test_rounds=P.cards.permutation_rounds,
                                       p_adjust=P.cards.p_adjust).set_index("measure")
    rec = export.record(model, card, against if changes is not None else None, changes)
    if args.out:
        stem = Path(model.rstrip("/")).name
        write_json(Path(args.out) / f"{stem}.card.json", rec)
        write_text(Path(args.out) / f"{stem}.card.md", export.markdown(rec, U.confidence))
        print(f"biaslab card: wrote {Path(args.out) / stem}.card.json and .card.md", file=sys.stderr)
    if args.json:
        print(json.dumps(rec, indent=2))
        return 0
    print(export.text(model, card, against if changes is not None else None, changes, confidence=U.confidence,
                      p_adjust=P.cards.p_adjust))
    return 0


def _cmd_sweep(args) -> int:
    from . import sweep

    try:
        results = sweep.sweep(sweep.load_config(args.file), args.executor, jobs=args.jobs, force=args.force,
                              dry_run=args.dry_run, folder=args.folder,
                              rerun=f"`biaslab sweep {args.file} --executor {args.executor}`")
    except sweep.SweepConfigError as err:
        print(f"biaslab sweep: {err}", file=sys.stderr)
        return 2
    except sweep.SweepError as err:
        print(f"biaslab sweep: {err}", file=sys.stderr)
        return 1
    print(sweep.summary(results))
    return 0


class UsageError(ValueError):
    """The command as given cannot be run (a missing argument, an unknown name): exit status 2."""


class _Parser(argparse.ArgumentParser):
    """Every option's default in its help; an epilog may be a function (the run command's stage list), called only
    when the help is printed."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        return super().format_help()


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """argparse's "(default: X)" only where it tells something: not after a help that names its default itself,
    nor for a flag (False), an unset option (None) or an empty repeatable one."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if "default" in (action.help or "") or action.default in (None, False, [], argparse.SUPPRESS):
            return action.help or ""
        return super()._get_help_string(action)


def _run_epilog() -> str:
    from .stages import listing

    return f"{listing()}\n\n{EXIT_STATUS}"


def _model_name(name: str) -> str:
    """``name`` if it is a registered model, a ``models.local_dirs`` entry or an existing folder; else a usage error
    with the closest registered name (a missing folder under data/models/ names the stage that builds it)."""
    from . import models
    from .config import load_params
    from .stages import did_you_mean

    local = load_params(sections=["models"]).models.local_dirs or {}
    if name in models.REGISTRY or name in local or Path(name).expanduser().is_dir():
        return name
    if "/" in name:
        built = " (trained models under data/models/ are built by `dvc repro`)" if "data/models/" in name else ""
        raise UsageError(f"model folder {name} not found{built}")
    raise UsageError(f"unknown model {name!r}{did_you_mean(name, [*models.REGISTRY, *local])}; registered: "
                     f"{', '.join(sorted(models.REGISTRY))} (or a sentence-transformers folder)")


EXIT_STATUS = """exit status: 0 done; 2 the command or its input is invalid (usage, an unknown stage, key or model, a value or
file that fails validation); 1 the work itself failed (a stage, a job, an input that is not built yet)."""


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="biaslab", description="biaslab: bias in text encoders and retrievers", epilog=EXIT_STATUS)
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="execute one notebook stage with papermill (as DVC does)",
                       description="Execute one notebook stage with papermill, as `dvc repro STAGE` does.",
                       epilog=_run_epilog)
    r.add_argument("stage", help="a stage of dvc.yaml; name@member for a foreach stage (listed below)")
    r.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="override one value (YAML); NAME is a name of the notebook's parameters cell (seed=1) or a "
                        "params.yaml key the stage reads (common.seed=1, or one entry inside a mapping it reads); "
                        "repeatable")
    r.add_argument("--out", type=Path, help="where to write the executed notebook (default: the stage's .ipynb output)")
    r.add_argument("--plain", action="store_true", help="run the cells as a script, without Jupyter or papermill "
                                                        "(no executed notebook is written)")
    r.set_defaults(fn=_cmd_run)
    f = sub.add_parser("fetch", help="fetch and check data sets into data/raw")
    f.add_argument("datasets", nargs="*", help="data sets of the manifest (default: params.yaml's data.datasets)")
    f.set_defaults(fn=_cmd_fetch)
    m = sub.add_parser("models", help="list models / check that some are available")
    m.add_argument("--check", nargs="+", metavar="NAME", help="resolve these models and print their folders")
    m.set_defaults(fn=_cmd_models)
    pp = sub.add_parser("params", help="validate params.yaml (and optionally merge an override file into it)")
    pp.add_argument("--apply", metavar="FILE", help="an override file to merge first, e.g. configs/paper-scale.yaml")
    pp.set_defaults(fn=_cmd_params)
    s = sub.add_parser("seat", help="SEAT audit of an encoder")
    s.add_argument("--model", help="a registered model or a folder (default: params.yaml's ragfair.seat.model)")
    s.add_argument("--tests", nargs="+", help="SEAT test names (default: params.yaml's ragfair.seat.tests)")
    s.set_defaults(fn=_cmd_seat)
    d = sub.add_parser("detect", help="predict bias labels of text(s) with a trained retriever (intersect §5)")
    d.add_argument("texts", nargs="*", help="paragraphs to classify")
    d.add_argument("--file", help="a text file, one paragraph per line")
    d.add_argument("--model", default="data/models/intersect/indic-srk4-C1",
                   help="trained retriever folder or a registered model name")
    d.add_argument("--reference", default="indic", help="indic | western | a .parquet with text,label columns")
    d.add_argument("--k", type=int, help="retrieved sentences (default: intersect.evaluate.k, or the k the "
                                         "evaluation chose)")
    d.add_argument("--show", type=int, default=5, help="evidence sentences to print per text")
    d.add_argument("--json", action="store_true", help="machine-readable output with all evidence")
    d.add_argument("--min-similarity", type=float, help="abstain (answer unbiased) below this best similarity "
                   "(default: the intersect.detect.abstain_quantile of the corpus's validation paragraphs; 0: never)")
    d.add_argument("--no-build", action="store_true", help="fail instead of building a missing reference corpus or "
                   "retriever with dvc repro")
    d.set_defaults(fn=_cmd_detect)
    t = sub.add_parser("timings", help="tabulate the stage timings logged with BIASLAB_TIMINGS=FILE")
    t.add_argument("file", help="the timings file (JSON lines)")
    t.add_argument("--cells", type=int, default=1, help="slowest cells to show per stage run")
    t.set_defaults(fn=_cmd_timings)
    dp = sub.add_parser("deps", help="check that every stage lists the library modules, raw data and params it uses")
    dp.add_argument("--write", action="store_true", help="rewrite the lib/ deps of every stage in dvc.yaml")
    dp.add_argument("--cell", metavar="STAGE", help="print the parameters cell the stage's notebook should have")
    dp.set_defaults(fn=_cmd_deps)
    c = sub.add_parser("claims", help="print each paper's claims table with computed verdicts as Markdown")
    c.add_argument("papers", nargs="*", help="paper slugs (default: every paper with a claims.csv)")
    c.add_argument("--against", metavar="REV", help="only what moved since git revision REV (HEAD, HEAD~1, a branch, "
                   "a hash): the verdict counts of both, every claim whose verdict or value changed, the competence "
                   "checks that flipped")
    c.set_defaults(fn=_cmd_claims)
    cd = sub.add_parser("card", help="a cross-paper bias card of one encoder (the cards stage's measures)")
    cd.add_argument("model", help="a registry name (e.g. minilm) or a sentence-transformers folder")
    cd.add_argument("--json", action="store_true", help="machine-readable output")
    cd.add_argument("--out", type=Path, metavar="DIR", help="also write MODEL.card.json and MODEL.card.md (a section "
                    "ready to paste into a model card) there")
    cd.add_argument("--no-build", action="store_true", help="fail instead of building the probe data it reads "
                    "with dvc repro")
    cd.add_argument("--against", metavar="REF", help="also measure REF (default: the first of cards.base_models; "
                    "'none' to skip) and print each measure's change in bias against it, as the cards stage does")
    cd.set_defaults(fn=_cmd_card)
    sw = sub.add_parser("sweep", help="run a grid with its members as scheduler jobs (submitit: local, debug, slurm)")
    sw.add_argument("file", help="a sweep file, e.g. configs/sweeps/paper-scale.yaml")
    sw.add_argument("--executor", required=True, choices=["local", "debug", "slurm"], help="where the jobs run")
    sw.add_argument("--jobs", type=int, default=2, help="jobs at a time (local) / the array's parallelism (slurm)")
    sw.add_argument("--force", action="store_true", help="rerun every fanned-out member, even those DVC calls current")
    sw.add_argument("--dry-run", action="store_true", help="print the waves without running anything")
    sw.add_argument("--folder", type=Path, help="submitit's job logs and sweep.log, the job ids of every member "
                    "(default: .sweeps/ in the repository)")
    sw.set_defaults(fn=_cmd_sweep)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .config import ParamsError
    from .data import DataError
    from .models import ModelUnavailableError
    from .stages import StageError

    try:
        status = args.fn(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below, not at the interpreter's exit
        return status
    except (UsageError, ParamsError, DataError, StageError, ModelUnavailableError) as err:
        print(f"biaslab {args.cmd}: {err}", file=sys.stderr)  # a known model without weights here: nothing ran
        return 2
    except (RuntimeError, FileNotFoundError) as err:
        print(f"biaslab {args.cmd}: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader stopped early (`biaslab claims | head`): no traceback, as Python's docs do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit does not fail again
        return 1


if __name__ == "__main__":
    sys.exit(main())
