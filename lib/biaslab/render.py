"""The reproduction report as pages: Markdown (``reports/README.md``) and HTML (``reports/index.html``) from the
papers' collected outputs (:func:`biaslab.report.collect`); :func:`build`, the report stage's one call, writes both.
Figures are linked relatively, so the HTML opens from disk, in JupyterLab and on a code host, with no copy of the
PNGs."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from . import claims as cl
from .report import GPU_DIR, Artefact, PaperReport, collect

PREVIEW_ROWS = 12  # rows of a CSV output shown under its artefact (the file has the rest)


def _num(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.3g}"


def _interval(value, low, high) -> str:
    return f"{_num(value)} [{_num(low)}, {_num(high)}]"


def _ours(r) -> str:
    text = _interval(r.our_value, r.ci_low, r.ci_high)
    if r.our_value == 0 and r.ci_low == 0 and r.ci_high == 0:  # every unit gave the same output with and without
        return f"no change (identical outputs): {text}"
    return text


def _float(x) -> float | None:
    try:
        v = float(str(x).replace("−", "-"))
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def interval_svg(r) -> str:
    """A small forest-plot mark of one claim: our interval (bar) and estimate (dot), 0 (grey line) and the paper's
    value (red tick) where it is a number, on one scale."""
    lo, hi, v = _float(r.ci_low), _float(r.ci_high), _float(r.our_value)
    if lo is None or hi is None or v is None:
        return ""
    effect = _float(getattr(r, "paper_effect", None))
    paper = effect if effect is not None else _float(r.paper_value)
    pts = [lo, hi, v, 0.0, *([paper] if paper is not None else [])]
    a, b = min(pts), max(pts)
    b = b if b > a else a + 1.0

    def x(t: float) -> float:
        return round(4 + (t - a) / (b - a) * 112, 1)

    marks = [f"<line x1='{x(0)}' y1='1' x2='{x(0)}' y2='15' stroke='#bbb'/>",
             f"<line x1='{x(lo)}' y1='8' x2='{x(hi)}' y2='8' stroke='#333' stroke-width='2'/>",
             f"<circle cx='{x(v)}' cy='8' r='3' fill='#333'/>"]
    if paper is not None:
        marks.append(f"<line x1='{x(paper)}' y1='2' x2='{x(paper)}' y2='14' stroke='#c00' stroke-width='2'/>")
    label = f"ours {_num(v)} [{_num(lo)}, {_num(hi)}]" + (f", paper {_num(paper)}" if paper is not None else "")
    return (f"<svg class='ci' width='120' height='16' viewBox='0 0 120 16' role='img' aria-label='{label}'>"
            f"<title>{label}</title>{''.join(marks)}</svg>")


def notebook_of(path: str, made_by: Mapping[str, str]) -> str | None:
    """The executed notebook (relative to reports/) of the stage whose output holds ``path`` (relative to
    reports/): the longest output path that is ``path`` or a folder above it."""
    best = max((o for o in made_by if path == o or path.startswith(o.rstrip("/") + "/")), key=len, default=None)
    return made_by[best] if best is not None else None


def _change(r) -> str:
    """A bias change with its interval and adjusted p-value when it has them (bias cards' ``moved.csv``; older files
    have none)."""
    lo, hi = getattr(r, "ci_low", None), getattr(r, "ci_high", None)
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return _num(r.bias_change)
    text, q = f"{_num(r.bias_change)} [{_num(lo)}, {_num(hi)}]", getattr(r, "q_value", None)
    return text if q is None or not math.isfinite(q) else f"{text}, q {_num(q)}"


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in counts.items()) or "none"


SCALE_HEAD = ["claim", "CPU default: ours [CI]", "verdict", "medium GPU profile: ours [CI]", "verdict"]


def scale_section(rep: PaperReport) -> tuple[str, str, list[list[str]]]:
    """What the report says of a paper's claims at the medium GPU profile (``rep.gpu``, paired in ``rep.scales``):
    their file (relative to reports/), a sentence (their verdict counts; how many of the claims both runs judged
    change verdict, and those one run has alone; the checks that change) and a row per claim or check whose verdict
    changed (:data:`SCALE_HEAD`)."""
    t = rep.scales
    judged = t["verdict_base"].notna() & t["verdict_other"].notna()
    claim, changed = t["kind"] == "claim", t[t["changed"]]
    text = (f"Claims: {_counts_text(cl.summary(rep.gpu))}. {int((t['changed'] & claim).sum())} of the "
            f"{int((judged & claim).sum())} claims judged at both scales change verdict")
    only = {where: int((t[f"verdict_{side}"].isna() & claim).sum())
            for side, where in (("other", "the CPU default"), ("base", "the GPU profile"))}
    alone = [f"{n} only at {where}" for where, n in only.items() if n]
    text += ("; " + ", ".join(alone)) if alone else ""
    if (t["changed"] & ~claim).any():  # a check that changes says the claims about its method mean something else
        text += f"; so do {int((t['changed'] & ~claim).sum())} of the {int((judged & ~claim).sum())} checks"
    text += ":" if len(changed) else "."
    rows = [[str(r.claim) + (" (check)" if r.kind == "check" else ""),
             _interval(r.our_value_base, r.ci_low_base, r.ci_high_base), str(r.verdict_base),
             _interval(r.our_value_other, r.ci_low_other, r.ci_high_other), str(r.verdict_other)]
            for r in changed.itertuples(index=False)]
    return f"{GPU_DIR}/{rep.values.paper}/claims.csv", text, rows


def gpu_note(reps: Sequence[PaperReport]) -> str:
    """The intro's sentence on the medium GPU profile: which papers have claims there, or that none has yet."""
    have = [rep.values.paper for rep in reps if rep.gpu is not None]
    where = f"{GPU_DIR}/<paper>/claims.csv; where and how each was computed: {GPU_DIR}/README.md"
    if not have:
        return f"No paper has claims at the medium GPU profile (configs/gpu.yaml) yet ({where})."
    return (f"At the medium GPU profile (configs/gpu.yaml; {where}): {', '.join(have)}, each under its own claims, "
            "with the verdicts that change with scale.")


# the summary's columns: every verdict
SUMMARY = ("reproduced", "reproduced_smaller", "ruled_out", "contradicted", "underpowered", "untestable")
GLANCE = (("hold", ("reproduced", "reproduced_smaller")), ("ruled out", ("ruled_out",)),
          ("contradicted", ("contradicted",)), ("need more data", ("underpowered",)),
          ("untestable", ("untestable",)))


def glance(rep: PaperReport) -> list[tuple[str, int, list[str]]]:
    """Per group of verdicts (holds, ruled out, contradicted, needs more data, untestable): how many of the paper's
    claims fall in it and what to say about them — the claims ruled out or contradicted, for those that need more
    data the units their paper effect needs, for the untestable ones each reason with its count."""
    c = rep.claims[rep.claims["kind"] == "claim"]
    out = []
    for label, verdicts in GLANCE:
        rows = c[c["verdict"].isin(verdicts)]
        if label in ("ruled out", "contradicted"):
            details = [str(x) for x in rows["claim"]]
        elif label == "need more data":
            sized = rows[rows["n_needed"].notna()]
            details = [f"{r.claim} (needs n ≈ {int(r.n_needed)}, we have {int(r.n)})"
                       for r in sized.itertuples(index=False)]
        elif label == "untestable":
            reasons = rows["rule"].astype(str).str.replace(r" \([^()]*\)$", "", regex=True).value_counts(sort=False)
            details = [f"{n} × {why}" for why, n in reasons.items()]
        else:
            details = []
        out.append((label, len(rows), details))
    return out


def competence_rows(rep: PaperReport) -> list[list[str]]:
    if rep.competence is None:
        return []
    return [[str(r.check), str(r.measure), _num(r.ours), f"[{_num(r.ci_low)}, {_num(r.ci_high)}]", _num(r.floor),
             "passed" if r.passed else "FAILED"] for r in rep.competence.itertuples(index=False)]


def _scale_text(s: Mapping) -> str:
    if s["label"] == "paper scale":
        return "paper scale (every setting of configs/paper-scale.yaml)"
    return (f"CPU default ({len(s['differ'])} of {s['paper_scale_keys']} paper-scale settings differ: "
            f"{', '.join(s['differ'][:6])}{' …' if len(s['differ']) > 6 else ''})")


def _status(rep: PaperReport, art: Artefact, comparisons: bool = True) -> str:
    sub = rep.artefact_claims(art)
    parts = []
    if art.ours:
        parts.append("regenerated" if not art.not_reproduced else "partly regenerated")
    else:
        parts.append("not regenerated")
    if len(sub):
        parts.append("claims: " + _counts_text(cl.summary(sub)))
    for c in rep.compared.get(art.id, []) if comparisons else []:
        parts.append(f"{c.spec.what} ({Path(c.file).name}): {c.verdict}")
    return "; ".join(parts)


def gaps(reps: Sequence[PaperReport]) -> list[tuple[str, str]]:
    """(heading, text) of everything not reproduced: artefacts without a (full) regeneration and why, then every
    contradicted claim with both values."""
    out = [(f"{rep.values.paper} {art.id}", f"({art.shows}) {art.not_reproduced}")
           for rep in reps for art in rep.values.artefacts if art.not_reproduced]
    out += [(f"{rep.values.paper}, contradicted", f"{r.claim} ({r.paper_section}; paper {r.paper_value}, ours "
             f"{_ours(r)})")
            for rep in reps for r in rep.claims[rep.claims["verdict"] == "contradicted"].itertuples(index=False)]
    return out


CARDS = "cards"  # the cards stage's folder under reports/
CARDS_INTRO = ("Every checkpoint the pipeline trains and the base encoder, each measure taken by the function of the "
               "paper that owns it (stage `cards`, `biaslab.cards`). Below, per bias measure, the checkpoints that "
               "lowered it most against their reference (negative change = less biased), with the paired bootstrap "
               "interval over queries or questions and the randomisation test's p-value adjusted over every change "
               "tested (q) where the measure has them; changes inside BBQ's arithmetic noise band, with an interval "
               "that includes 0 or not significant after the adjustment are not listed.")


def _cell(x) -> str:
    """Text for a Markdown table cell: a pipe would end the cell (fairrank's ranker names hold one)."""
    return str(x).replace("|", "\\|")


def read_moved(reports: Path) -> pd.DataFrame | None:
    path = Path(reports) / CARDS / "moved.csv"
    return pd.read_csv(path) if path.is_file() else None


def cards_markdown(moved: pd.DataFrame | None) -> list[str]:
    """The cross-paper bias cards section (``moved``: ``reports/cards/moved.csv``), or a line saying they are not
    built."""
    lines = ["", "## Bias cards across papers", ""]
    if moved is None:
        return [*lines, "Not built yet: `dvc repro cards`."]
    lines += [CARDS_INTRO, "", f"All cards: [cards.csv]({CARDS}/cards.csv); every change: "
              f"[bias_change.csv]({CARDS}/bias_change.csv).", "", f"![bias change per checkpoint and measure]"
              f"({CARDS}/heatmap.png)", "", "| measure | checkpoint | from | value | reference | change |",
              "|---|---|---|---|---|---|"]
    for r in moved.itertuples(index=False):
        lines.append(f"| {r.measure} | {_cell(r.checkpoint)} | {r.paper} | {_num(r.value)} | "
                     f"{_num(r.reference_value)} ({_cell(r.reference)}) | "
                     f"{_change(r)} |")
    return lines


def cards_html(moved: pd.DataFrame | None, made_by: Mapping[str, str] | None = None) -> str:
    e, made_by = html.escape, made_by or {}
    if moved is None:
        return "<h2 id='cards'>Bias cards across papers</h2><p>Not built yet: <code>dvc repro cards</code>.</p>"
    rows = "".join(f"<tr><td>{e(str(r.measure))}</td><td>{e(str(r.checkpoint))}</td><td>{e(str(r.paper))}</td>"
                   f"<td>{_num(r.value)}</td><td>{_num(r.reference_value)} ({e(str(r.reference))})</td>"
                   f"<td>{_change(r)}</td></tr>" for r in moved.itertuples(index=False))
    return (f"<h2 id='cards'>Bias cards across papers</h2><p>{e(CARDS_INTRO)}</p>"
            f"<p class='made'><a href='{CARDS}/cards.csv'>cards.csv</a>, <a href='{CARDS}/bias_change.csv'>"
            f"bias_change.csv</a>{_made(f'{CARDS}/cards.csv', made_by)}</p>"
            f"<figure><img src='{CARDS}/heatmap.png' alt='bias cards heatmap'><figcaption><a href='{CARDS}/heatmap.png'>"
            f"{CARDS}/heatmap.png</a>{_made(f'{CARDS}/heatmap.png', made_by)}</figcaption></figure>"
            "<div class='scroll'><table><tr><th>measure</th><th>checkpoint</th><th>from</th><th>value</th>"
            f"<th>reference</th><th>change</th></tr>{rows}</table></div>")


def markdown(reps: Sequence[PaperReport], moved: pd.DataFrame | None, made_by: Mapping[str, str] | None = None) -> str:
    """``reports/README.md``: renders on a code host; links relative to reports/, each figure once, with the
    executed notebook that made it."""
    made_by, shown = made_by or {}, set()
    lines = ["# Reproduction report", "",
             "Built by the `report` stage from the stages' outputs (each paper's `results/claims.csv`) and the papers' "
             "artefact lists (`paper_values/<paper>.yaml`). Verdicts are computed by each paper's analysis from "
             "intervals (docs/claims.md: the verdicts, Holm across a paper's claims, competence floors). "
             + gpu_note(reps), "",
             "| paper | scale | " + " | ".join(v.replace("_", " ") for v in SUMMARY) + " |",
             "|---|---|" + "---|" * len(SUMMARY)]
    for rep in reps:
        c = rep.counts
        lines.append(f"| [{rep.values.paper}](#{rep.values.paper}) {rep.values.title} | {rep.scale['label']} | "
                     + " | ".join(str(c.get(v, 0)) for v in SUMMARY) + " |")
    lines += ["", "## At a glance", ""]
    for rep in reps:
        lines.append(f"- **{rep.values.paper}**: " + "; ".join(
            f"{label}: {n}" + (f" ({'; '.join(_cell(i) for i in details)})" if details else "")
            for label, n, details in glance(rep) if n))
    for rep in reps:
        v = rep.values
        lines += ["", f"## {v.paper}", "", f"**{v.title}** — run at {_scale_text(rep.scale)}. Claims: "
                  f"{_counts_text(rep.counts)}."]
        comp = competence_rows(rep)
        if comp:
            lines += ["", "### Competence of the baselines", "", "| check | measure | ours | CI | floor | |",
                      "|---|---|---|---|---|---|"] + ["| " + " | ".join(_cell(x) for x in r) + " |" for r in comp]
        lines += ["", "### Tables and figures", "", "| paper | section | shows | ours | status |",
                  "|---|---|---|---|---|"]
        for art in v.artefacts:
            ours = ", ".join(f"[{Path(p).name}]({p})" for p in art.ours) or "–"
            lines.append(f"| {art.id} | {art.ref} | {art.shows} | {ours} | {_status(rep, art)} |")
        for art in v.artefacts:
            for p in art.ours:
                if p.endswith(".png") and p not in shown:
                    shown.add(p)
                    nb = notebook_of(p, made_by)
                    lines += ["", f"![{v.paper} {art.id}: {art.shows}]({p})"]
                    lines += ["", f"*{art.id}* — made by [{nb}]({nb})"] if nb else []
        numbers = [(art, c) for art in v.artefacts for c in rep.compared.get(art.id, [])]
        if numbers:
            lines += ["", "### The paper's numbers beside ours"]
        for art, c in numbers:
            src = f"; the paper's values from {c.spec.ref}" if c.spec.values else ""
            lines += ["", f"**{art.id}, {c.spec.what}** ([{Path(c.file).name}]({c.file}){src}): {c.verdict}.", "",
                      "| " + " | ".join([*c.spec.key, "paper", "ours", "difference"]) + " |",
                      "|" + "---|" * (len(c.spec.key) + 3)]
            for r in c.table.itertuples(index=False):
                keys = [_cell(r[i]) for i in range(len(c.spec.key))]
                lines.append("| " + " | ".join([*keys, _num(r.paper), _num(r.ours), _num(r.difference)]) + " |")
        claims_nb = notebook_of(f"{v.paper}/results/claims.csv", made_by)
        lines += ["", "### Claims", ""] + ([f"Made by [{claims_nb}]({claims_nb}).", ""] if claims_nb else [])
        lines += ["| claim | kind | section | paper (effect) | ours [CI] | MDE | verdict |",
                  "|---|---|---|---|---|---|---|"]
        for r in rep.claims.itertuples(index=False):
            lines.append(f"| {_cell(r.claim)} | {r.kind} | {r.paper_section} | {_paper(r)} | {_ours(r)} | "
                         f"{_num(r.mde)} | **{r.verdict}** |")
        if rep.gpu is not None:
            gfile, text, rows = scale_section(rep)
            by = f", made by [{claims_nb}]({claims_nb}) at the profile's parameters" if claims_nb else ""
            lines += ["", "### At the medium GPU profile", "", f"[{gfile}]({gfile}){by}. {text}"]
            if rows:
                lines += ["", "| " + " | ".join(SCALE_HEAD) + " |", "|" + "---|" * len(SCALE_HEAD)]
                lines += ["| " + " | ".join(_cell(x) for x in r) + " |" for r in rows]
    lines += cards_markdown(moved)
    lines += ["", "## What is not reproduced, and why", ""]
    lines += [f"- **{head}**: {text}" for head, text in gaps(reps)]
    for rep in reps:
        n = rep.counts.get("underpowered", 0)
        if n:
            lines.append(f"- **{rep.values.paper}**: {n} claims need more data (their intervals cover both the null "
                         "and the paper's effect; the `n_needed` column of claims.csv says how many units would do)")
    return "\n".join(lines) + "\n"


def _paper(r) -> str:
    return str(r.paper_value) + (f" ({_num(r.paper_effect)})" if math.isfinite(r.paper_effect) else "")


def _preview(path: Path) -> str:
    df = pd.read_csv(path)
    more = len(df) - PREVIEW_ROWS
    table = df.head(PREVIEW_ROWS).to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0,
                                          classes="preview")
    return table + (f"<p class='more'>… {more} more rows in the file</p>" if more > 0 else "")


CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222}
h1{margin:.3em 0}table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}th{background:#f3f3f3}
.scroll{overflow-x:auto;max-width:100%}p,li,figcaption{overflow-wrap:anywhere}
.reproduced,.reproduced_smaller{color:#176317;font-weight:600}.contradicted{color:#a11;font-weight:600}
.ruled_out{color:#6a3d9a;font-weight:600}.underpowered{color:#8a6d00;font-weight:600}
.untestable{color:#666;font-weight:600}.FAILED{color:#a11;font-weight:600}img{max-width:100%;border:1px solid #eee}.preview{font-size:11px}
.more,.made{font-size:12px;color:#555}figure{margin:1em 0}figcaption{font-size:13px;color:#444}
.ref{font-weight:normal;color:#555}.shows{margin:.2em 0}svg.ci{vertical-align:middle}"""


def _made(path: str, made_by: Mapping[str, str]) -> str:
    """`` · made by <notebook>`` (HTML) for an output path relative to reports/, or nothing."""
    nb = notebook_of(path, made_by)
    return f" · made by <a href='{html.escape(nb)}'>{html.escape(nb)}</a>" if nb else ""


def _scroll(table: str) -> str:
    return f"<div class='scroll'>{table}</div>"


def html_page(reps: Sequence[PaperReport], reports: Path, moved: pd.DataFrame | None,
              made_by: Mapping[str, str] | None = None) -> str:
    """``reports/index.html``: the same content with CSV previews, figures linked relatively, each table and figure
    linked to the executed notebook that made it (``made_by``: output path -> notebook, relative to reports/), each
    figure shown once, wide tables scrolling inside their box."""
    e, made_by = html.escape, made_by or {}
    out = ["<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
           f"<title>Reproduction report</title><style>{CSS}</style></head><body><h1>Reproduction report</h1>",
           "<p>Built by the <code>report</code> stage from each paper's <code>results/claims.csv</code> and "
           "<code>paper_values/&lt;paper&gt;.yaml</code>. Verdicts are computed by the analysis stages "
           f"(docs/claims.md). {e(gpu_note(reps))}</p>",
           "<div class='scroll'><table id='summary'><tr><th>paper</th><th>scale</th>"
           + "".join(f"<th>{e(v.replace('_', ' '))}</th>" for v in SUMMARY) + "</tr>"]
    for rep in reps:
        c = rep.counts
        out.append(f"<tr><td><a href='#{e(rep.values.paper)}'>{e(rep.values.paper)}</a> {e(rep.values.title)}</td>"
                   f"<td>{e(rep.scale['label'])}</td>" + "".join(f"<td>{c.get(v, 0)}</td>" for v in SUMMARY) + "</tr>")
    out.append("</table></div><h2 id='glance'>At a glance</h2><ul>")
    for rep in reps:
        parts = [f"{e(label)}: {n}" + (f" <span class='made'>({e('; '.join(details))})</span>" if details else "")
                 for label, n, details in glance(rep) if n]
        out.append(f"<li><b>{e(rep.values.paper)}</b>: {' · '.join(parts)}</li>")
    out.append("</ul>")
    shown: dict[str, str] = {}  # figure -> the anchor of the artefact it was first shown under
    for rep in reps:
        v = rep.values
        out += [f"<h2 id='{e(v.paper)}'>{e(v.paper)}: {e(v.title)}</h2>",
                f"<p>Run at {e(_scale_text(rep.scale))}. Claims: {e(_counts_text(rep.counts))}.</p>"]
        comp = competence_rows(rep)
        if comp:
            cfile = f"{v.paper}/results/competence.csv"
            out.append(f"<h3>Competence of the baselines</h3><p class='made'><a href='{e(cfile)}'>{e(cfile)}</a>"
                       f"{_made(cfile, made_by)}; a claim whose baseline fails its floor is untestable</p>"
                       + _scroll("<table><tr><th>check</th><th>measure</th><th>ours</th><th>CI</th><th>floor</th>"
                                 "<th></th></tr>" + "".join("<tr>" + "".join(
                                     f"<td{' class=FAILED' if x == 'FAILED' else ''}>{e(x)}</td>" for x in r)
                                     + "</tr>" for r in comp) + "</table>"))
        out.append("<h3>Tables and figures</h3>")
        for art in v.artefacts:
            anchor = f"{v.paper}-{art.id}".replace(" ", "-")
            out.append(f"<h4 id='{e(anchor)}'>{e(art.id)} <span class='ref'>({e(art.ref)})</span></h4>"
                       f"<p class='shows'>{e(art.shows)}. <span class='made'>{e(_status(rep, art, comparisons=False))}</span></p>")
            if art.not_reproduced:
                out.append(f"<p><em>{e(art.not_reproduced)}</em></p>")
            for c in rep.compared.get(art.id, []):
                rows = "".join("<tr>" + "".join(f"<td>{e(str(x))}</td>" for x in r[: len(c.spec.key)])
                               + "".join(f"<td>{e(_num(x))}</td>" for x in r[len(c.spec.key):len(c.spec.key) + 3])
                               + f"<td>{'yes' if r[-1] else 'no'}</td></tr>" for r in c.table.itertuples(index=False))
                head = "".join(f"<th>{e(k)}</th>" for k in [*c.spec.key, "paper", "ours", "difference", "within"])
                src = f"; the paper's values from {c.spec.ref}" if c.spec.values else ""
                out.append(f"<p><b>{e(c.spec.what)}</b> (<a href='{e(c.file)}'>{e(c.file)}</a>{e(src)}"
                           f"{_made(c.file, made_by)}): {e(c.verdict)}</p>"
                           + _scroll(f"<table class='preview'><tr>{head}</tr>{rows}</table>"))
            for p in art.ours:
                if p.endswith(".png") and p in shown:
                    out.append(f"<p class='made'>Figure <a href='{e(p)}'>{e(p)}</a>: shown above, under "
                               f"<a href='#{e(shown[p])}'>{e(shown[p])}</a>.</p>")
                elif p.endswith(".png"):
                    shown[p] = anchor
                    out.append(f"<figure><img src='{e(p)}' alt='{e(art.id)}: {e(art.shows)}'><figcaption>"
                               f"<a href='{e(p)}'>{e(p)}</a>{_made(p, made_by)}</figcaption></figure>")
                elif p.endswith(".csv"):
                    out.append(f"<p class='made'><a href='{e(p)}'>{e(p)}</a>{_made(p, made_by)}</p>"
                               + _scroll(_preview(reports / p)))
                else:
                    out.append(f"<p class='made'><a href='{e(p)}'>{e(p)}</a>{_made(p, made_by)}</p>")
        claims_file = f"{v.paper}/results/claims.csv"
        out.append(f"<h3>Claims</h3><p class='made'><a href='{e(claims_file)}'>{e(claims_file)}</a>"
                   f"{_made(claims_file, made_by)}; the bar: our interval and estimate, grey: 0, red: the paper's "
                   "effect in our units (or its value where it is a number); MDE: the smallest effect our n detects "
                   "at 80 % power</p>")
        out.append("<div class='scroll'><table><tr><th>claim</th><th>kind</th><th>section</th><th>paper (effect)</th>"
                   "<th>ours [CI]</th><th>interval</th><th>MDE</th><th>verdict</th><th>rule</th></tr>")
        for r in rep.claims.itertuples(index=False):
            out.append(f"<tr><td>{e(str(r.claim))}</td><td>{e(str(r.kind))}</td><td>{e(str(r.paper_section))}</td>"
                       f"<td>{e(_paper(r))}</td><td>{e(_ours(r))}</td><td>{interval_svg(r)}</td><td>{e(_num(r.mde))}"
                       f"</td><td class='{e(r.verdict)}'>{e(r.verdict.replace('_', ' '))}</td><td>{e(str(r.rule))}"
                       "</td></tr>")
        out.append("</table></div>")
        if rep.gpu is not None:
            gfile, text, rows = scale_section(rep)
            by = _made(claims_file, made_by)
            at = e(" at the profile's parameters") if by else ""
            out.append(f"<h3>At the medium GPU profile</h3><p><a href='{e(gfile)}'>{e(gfile)}</a>{by}{at}. "
                       f"{e(text)}</p>")
            if rows:
                out.append(_scroll("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in SCALE_HEAD) + "</tr>"
                                   + "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in r) + "</tr>" for r in rows)
                                   + "</table>"))
    out.append(cards_html(moved, made_by))
    out.append("<h2>What is not reproduced, and why</h2><ul>")
    out += [f"<li><b>{e(head)}</b>: {e(text)}</li>" for head, text in gaps(reps)]
    out.append("</ul></body></html>")
    return "\n".join(out) + "\n"


def build(reports: Path, papers: Sequence[str], params: Mapping, paper_scale: Mapping,
          made_by: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(README.md text, index.html text) for ``papers`` from the outputs under ``reports``; ``made_by`` maps stage
    outputs to the executed notebook of the stage that writes them (both relative to ``reports``; dvc.yaml's, from
    :func:`biaslab.stages.made_by`), so every table and figure links to the notebook that made it."""
    reps = collect(Path(reports), papers, params, paper_scale)
    moved = read_moved(Path(reports))  # the bias cards' summary, read once for both pages
    return markdown(reps, moved, made_by), html_page(reps, Path(reports), moved, made_by)
