"""Hand-made SVG plots for the HTML page: small, deterministic, no library, no network.

Every function returns one ``<svg>`` element as a string; every label is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

__all__ = [
    "PALETTE",
    "bars_svg",
    "curves_svg",
    "forest_svg",
    "nice_ticks",
    "paired_bars_svg",
    "scatter_svg",
    "sequence_svg",
    "step_ticks",
]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
_W, _H = 440, 260
_L, _R, _T, _B = 48, 12, 12, 40


def _e(s: object) -> str:
    return escape(str(s), quote=True)


def _svg(body: list[str], label: str, w: int = _W, h: int = _H) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {w} {h}" '
        f'width="{w}" height="{h}" role="img" aria-label="{_e(label)}">'
        f"<title>{_e(label)}</title>" + "".join(body) + "</svg>"
    )


def _f(x: float) -> str:
    return f"{x:.1f}"


def _axes(
    xticks: Sequence[tuple[float, str]],
    yticks: Sequence[tuple[float, str]],
    xlabel: str,
    ylabel: str,
    w: int = _W,
    h: int = _H,
) -> list[str]:
    out = [
        f'<line x1="{_L}" y1="{h - _B}" x2="{w - _R}" y2="{h - _B}" stroke="#555"/>',
        f'<line x1="{_L}" y1="{_T}" x2="{_L}" y2="{h - _B}" stroke="#555"/>',
    ]
    for x, lab in xticks:
        out.append(
            f'<line x1="{_f(x)}" y1="{h - _B}" x2="{_f(x)}" y2="{h - _B + 4}" stroke="#555"/>'
            f'<text x="{_f(x)}" y="{h - _B + 15}" font-size="10" text-anchor="middle">{_e(lab)}</text>'
        )
    for y, lab in yticks:
        out.append(
            f'<line x1="{_L}" y1="{_f(y)}" x2="{w - _R}" y2="{_f(y)}" stroke="#eee"/>'
            f'<text x="{_L - 4}" y="{_f(y + 3)}" font-size="10" text-anchor="end">{_e(lab)}</text>'
        )
    out.append(
        f'<text x="{(_L + w - _R) / 2:.1f}" y="{h - 6}" font-size="11" text-anchor="middle">{_e(xlabel)}</text>'
        f'<text x="12" y="{(_T + h - _B) / 2:.1f}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {(_T + h - _B) / 2:.1f})">{_e(ylabel)}</text>'
    )
    return out


def _yscale(lo: float, hi: float, h: int = _H) -> Callable[[float], float]:
    return lambda v: (h - _B) - (v - lo) / (hi - lo or 1) * (h - _B - _T)


def curves_svg(
    series: Sequence[tuple[str, Sequence[tuple[int, float, float | None, float | None]]]],
    *,
    label: str,
) -> str:
    """Lines of value against k (log2 axis) with interval bands; points ``(k, value, lo, hi)``."""
    ks = sorted({k for _, pts in series for k, *_ in pts}) or [1]
    lk = [math.log2(k) for k in ks]
    x0, x1 = min(lk), max(lk)

    def xs(k: int) -> float:
        return _L + ((math.log2(k) - x0) / ((x1 - x0) or 1)) * (_W - _L - _R)

    ys = _yscale(0.0, 1.0)
    body = _axes(
        [(xs(k), str(k)) for k in ks],
        [(ys(v), f"{v:.2f}") for v in (0, 0.25, 0.5, 0.75, 1)],
        "k (draws)",
        "value",
    )
    for i, (name, pts) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        band = [(k, v, lo, hi) for k, v, lo, hi in pts if lo is not None and hi is not None]
        if len(band) >= 2:
            upper = " ".join(f"{_f(xs(k))},{_f(ys(hi))}" for k, _, _, hi in band)
            lower = " ".join(f"{_f(xs(k))},{_f(ys(lo))}" for k, _, lo, _ in reversed(band))
            body.append(
                f'<polygon class="band" points="{upper} {lower}" fill="{color}" fill-opacity="0.13" stroke="none"/>'
            )
        line = " ".join(f"{_f(xs(k))},{_f(ys(v))}" for k, v, _, _ in pts)
        body.append(
            f'<polyline class="curve" points="{line}" fill="none" stroke="{color}" stroke-width="2"/>'
        )
        for k, v, lo, hi in pts:
            ci = "" if lo is None else f" [{lo:.4f}, {hi:.4f}]"
            body.append(
                f'<circle cx="{_f(xs(k))}" cy="{_f(ys(v))}" r="3" fill="{color}">'
                f"<title>{_e(name)} k={k}: {v:.4f}{ci}</title></circle>"
            )
        body.append(
            f'<rect x="{_L + 8}" y="{_T + 4 + 14 * i}" width="10" height="10" fill="{color}"/>'
            f'<text x="{_L + 22}" y="{_T + 13 + 14 * i}" font-size="10">{_e(name)}</text>'
        )
    return _svg(body, label)


def bars_svg(bars: Sequence[tuple[str, float]], *, label: str, ylabel: str = "problems") -> str:
    """A bar chart of counts with one labelled bar each."""
    top = max([v for _, v in bars] + [1])
    ys = _yscale(0.0, float(top))
    n = max(len(bars), 1)
    slot = (_W - _L - _R) / n
    ticks = sorted({0, top // 2, top}) if top >= 2 else [0, top]
    body = _axes(
        [(_L + slot * (i + 0.5), lab) for i, (lab, _) in enumerate(bars)] if n <= 12 else [],
        [(ys(t), str(int(t))) for t in ticks],
        label,
        ylabel,
    )
    for i, (lab, v) in enumerate(bars):
        x = _L + slot * i + slot * 0.1
        y = ys(v)
        body.append(
            f'<rect class="bar" x="{_f(x)}" y="{_f(y)}" width="{_f(slot * 0.8)}" '
            f'height="{_f(max(_H - _B - y, 0))}" fill="{PALETTE[0]}"><title>{_e(lab)}: {_e(v)}</title></rect>'
        )
    return _svg(body, label)


def nice_ticks(limit: float, *, most: int = 7) -> tuple[list[float], int]:
    """Symmetric ticks ``-m*s .. 0 .. +m*s`` with a round step ``s`` (1, 2, 2.5 or 5 times a
    power of ten) whose outermost tick is at least ``limit``; at most ``most`` ticks. Returns
    the ticks and the decimals that print the step exactly."""
    limit = max(limit, 1e-9)
    for exp in range(math.floor(math.log10(limit / (most // 2))) - 1, 20):
        for mult in (1.0, 2.0, 2.5, 5.0):
            step = mult * 10.0**exp
            m = math.ceil(limit / step - 1e-9)
            if 2 * m + 1 <= most:
                decimals = max(0, -exp + (1 if mult == 2.5 else 0))
                return [round(i * step, decimals + 2) for i in range(-m, m + 1)], decimals
    return [-limit, 0.0, limit], 3  # pragma: no cover - unreachable for finite limits


def forest_svg(
    rows: Sequence[tuple[str, float | None, float | None, float | None, str]],
    *,
    threshold: float,
    label: str,
) -> str:
    """Effect per row with its interval, zero line and the shaded band [-threshold, +threshold]."""
    vals = [v for _, e, lo, hi, _ in rows for v in (e, lo, hi) if v is not None]
    ticks, decimals = nice_ticks(max([abs(v) for v in vals] + [threshold * 1.5, 1e-3]) * 1.05)
    span = ticks[-1]  # the axis ends at its last tick
    h = _T + _B + 28 * max(len(rows), 1)
    right = _R + 24  # room for half of the last tick label
    # room for the longest row label (about 6.5 px a character at font-size 11)
    label_px = max([6.5 * len(name) for name, *_ in rows] + [100.0])
    w = _W + 100 + int(label_px - 100)
    left = _L + int(label_px)

    def xs(v: float) -> float:
        return left + (v + span) / (2 * span) * (w - left - right)

    body = [
        f'<rect class="threshold" x="{_f(xs(-threshold))}" y="{_T}" width="{_f(xs(threshold) - xs(-threshold))}" '
        f'height="{h - _B - _T}" fill="#9e9e9e" fill-opacity="0.2"><title>threshold ±{threshold:g}</title></rect>',
        f'<line x1="{_f(xs(0))}" y1="{_T}" x2="{_f(xs(0))}" y2="{h - _B}" stroke="#555" stroke-dasharray="3,3"/>',
        f'<line x1="{left}" y1="{h - _B}" x2="{w - right}" y2="{h - _B}" stroke="#555"/>',
    ]
    for t in ticks:
        tick = "0" if t == 0 else f"{t:+.{decimals}f}"
        body.append(
            f'<line x1="{_f(xs(t))}" y1="{h - _B}" x2="{_f(xs(t))}" y2="{h - _B + 4}" stroke="#555"/>'
            f'<text class="tick" x="{_f(xs(t))}" y="{h - _B + 15}" font-size="10" text-anchor="middle">{tick}</text>'
        )
    body.append(
        f'<text x="{(left + w) / 2:.1f}" y="{h - 6}" font-size="11" text-anchor="middle">'
        "effect (candidate - baseline; negative = worse)</text>"
    )
    for i, (name, e, lo, hi, verdict) in enumerate(rows):
        y = _T + 14 + 28 * i
        color = (
            "#b00020"
            if verdict in ("regression", "blocked")
            else "#1b5e20"
            if verdict == "improvement"
            else "#333"
        )
        body.append(
            f'<text x="{left - 6}" y="{y + 4}" font-size="11" text-anchor="end">{_e(name)}</text>'
        )
        if e is None:
            body.append(f'<text x="{_f(xs(0) + 6)}" y="{y + 4}" font-size="11">N/A</text>')
            continue
        if lo is not None and hi is not None:
            body.append(
                f'<line class="ci" x1="{_f(xs(lo))}" y1="{y}" x2="{_f(xs(hi))}" y2="{y}" stroke="{color}" stroke-width="2"/>'
            )
        ci = "" if lo is None or hi is None else f" [{lo:+.4f}, {hi:+.4f}]"
        body.append(
            f'<circle cx="{_f(xs(e))}" cy="{y}" r="5" fill="{color}"><title>{_e(name)}: {e:+.4f}{ci} '
            f"({_e(verdict.replace('_', ' '))})</title></circle>"
        )
    return _svg(body, label, w, h)


def paired_bars_svg(
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    label: str,
    ylabel: str = "rollouts",
) -> str:
    """Counts of several series over the same bins, side by side on one axis (one colour
    and one legend entry per series)."""
    top = max([v for _, counts in series for v in counts] + [1])
    ys = _yscale(0.0, float(top))
    n = max(len(labels), 1)
    slot = (_W - _L - _R) / n
    width = slot * 0.8 / max(len(series), 1)
    ticks = sorted({0, int(top) // 2, int(top)}) if top >= 2 else [0, int(top)]
    body = _axes(
        [(_L + slot * (i + 0.5), lab) for i, lab in enumerate(labels)] if n <= 12 else [],
        [(ys(t), str(int(t))) for t in ticks],
        label,
        ylabel,
    )
    for j, (name, counts) in enumerate(series):
        color = PALETTE[j % len(PALETTE)]
        for i, (lab, v) in enumerate(zip(labels, counts)):
            x = _L + slot * i + slot * 0.1 + width * j
            y = ys(v)
            body.append(
                f'<rect class="bar" data-series="{_e(name)}" x="{_f(x)}" y="{_f(y)}" width="{_f(width)}" '
                f'height="{_f(max(_H - _B - y, 0))}" fill="{color}"><title>{_e(name)} {_e(lab)}: {_e(v)}</title></rect>'
            )
        body.append(
            f'<rect x="{_W - _R - 90}" y="{_T + 4 + 14 * j}" width="10" height="10" fill="{color}"/>'
            f'<text x="{_W - _R - 76}" y="{_T + 13 + 14 * j}" font-size="10">{_e(name)}</text>'
        )
    return _svg(body, label)


def scatter_svg(points: Sequence[tuple[float, float, int]], *, label: str) -> str:
    """Per-problem accuracy, baseline (x) against candidate (y); a point's area is its count."""
    xs: Callable[[float], float] = lambda v: _L + v * (_W - _L - _R)  # noqa: E731
    ys = _yscale(0.0, 1.0)
    body = _axes(
        [(xs(v), f"{v:.2f}") for v in (0, 0.25, 0.5, 0.75, 1)],
        [(ys(v), f"{v:.2f}") for v in (0, 0.25, 0.5, 0.75, 1)],
        "baseline accuracy per problem",
        "candidate accuracy",
    )
    body.append(
        f'<line x1="{_f(xs(0))}" y1="{_f(ys(0))}" x2="{_f(xs(1))}" y2="{_f(ys(1))}" stroke="#999" stroke-dasharray="4,3"/>'
    )
    for x, y, n in points:
        color = "#b00020" if y < x else "#1b5e20" if y > x else "#555"
        body.append(
            f'<circle class="pt" cx="{_f(xs(x))}" cy="{_f(ys(y))}" r="{2.5 + 1.5 * math.sqrt(n):.1f}" '
            f'fill="{color}" fill-opacity="0.45"><title>{n} problem(s): baseline {x:.3f}, candidate {y:.3f}</title></circle>'
        )
    return _svg(body, label)


def step_ticks(top: float, *, most: int = 6) -> list[int]:
    """Ticks ``0, s, 2s, ...`` up to ``top`` with a round whole step ``s`` (1, 2 or 5 times a
    power of ten), at most ``most`` of them."""
    exp = 0
    while True:
        for mult in (1, 2, 5):
            step = mult * 10**exp
            if int(top // step) + 1 <= most:
                return list(range(0, int(top) + 1, step))
        exp += 1


#: One look of a confidence sequence: problems used, lower bound, upper bound, estimate
#: (None before the first paired difference).
SequenceLook = tuple[int, float, float, float | None]


def _sequence_legend() -> list[str]:
    items = [
        ('fill="#1f77b4" fill-opacity="0.25"', "confidence sequence"),
        ('fill="#1f77b4"', "running estimate"),
        ('fill="#9e9e9e"', "±threshold"),
    ]
    return [
        f'<rect x="{_W - _R - 128}" y="{_T + 4 + 14 * i}" width="10" height="10" {style}/>'
        f'<text x="{_W - _R - 114}" y="{_T + 13 + 14 * i}" font-size="10">{_e(name)}</text>'
        for i, (style, name) in enumerate(items)
    ]


def sequence_svg(
    looks: Sequence[SequenceLook], *, budget: int, threshold: float, label: str
) -> str:
    """A confidence sequence over its looks: x the problems used (0 to ``budget``), y the
    mean difference (candidate - baseline) on a symmetric axis; the band between the lower
    and upper bounds with one vertical segment per look (class ``cs``, its figures in
    ``data-`` attributes), the running estimate (``estimate``), the line at 0 (``zero``),
    the lines at -threshold and +threshold (``threshold``) and the stopping look
    (``stop``). The plot's frame and domain are on its ``g.sequence`` element's ``data-``
    attributes: ``x = left + problems / budget * (right - left)``, ``y = bottom - (v + span)
    / (2 span) * (bottom - top)``."""
    bounds = [abs(v) for _, lo, hi, _ in looks for v in (lo, hi)]
    ticks, decimals = nice_ticks(max([*bounds, 1.5 * threshold, 1e-3]), most=9)
    span = ticks[-1]
    left, right, top, bottom = _L, _W - _R, _T, _H - _B
    xmax = max(budget, 1)

    def xs(n: float) -> float:
        return left + n / xmax * (right - left)

    ys = _yscale(-span, span)
    body = _axes(
        [(xs(t), str(t)) for t in step_ticks(xmax)],
        [(ys(t), "0" if t == 0 else f"{t:+.{decimals}f}") for t in ticks],
        "problems used",
        "mean difference (candidate - baseline)",
    )
    body.append(
        f'<g class="sequence" data-left="{left}" data-right="{right}" data-top="{top}" '
        f'data-bottom="{bottom}" data-budget="{xmax}" data-span="{span!r}">'
    )
    for v in (-threshold, threshold):
        body.append(
            f'<line class="threshold" data-value="{v!r}" x1="{left}" y1="{_f(ys(v))}" '
            f'x2="{right}" y2="{_f(ys(v))}" stroke="#9e9e9e" stroke-dasharray="5,3"/>'
        )
    body.append(
        f'<line class="zero" x1="{left}" y1="{_f(ys(0.0))}" x2="{right}" y2="{_f(ys(0.0))}" '
        'stroke="#555"/>'
    )
    body += _sequence_marks(looks, xs, ys)
    body.append("</g>")
    body += _sequence_legend()
    return _svg(body, label)


def _sequence_marks(
    looks: Sequence[SequenceLook], xs: Callable[[float], float], ys: Callable[[float], float]
) -> list[str]:
    """The band, each look's segment, the running estimate and the stopping look."""
    color = PALETTE[0]
    out = []
    if len(looks) >= 2:
        upper = " ".join(f"{_f(xs(n))},{_f(ys(hi))}" for n, _, hi, _ in looks)
        lower = " ".join(f"{_f(xs(n))},{_f(ys(lo))}" for n, lo, _, _ in reversed(looks))
        out.append(
            f'<polygon class="band" points="{upper} {lower}" fill="{color}" '
            'fill-opacity="0.15" stroke="none"/>'
        )
    for n, lo, hi, est in looks:
        e = "N/A" if est is None else f"{est:+.4f}"
        out.append(
            f'<line class="cs" data-problems="{n}" data-lower="{lo!r}" data-upper="{hi!r}" '
            f'x1="{_f(xs(n))}" y1="{_f(ys(hi))}" x2="{_f(xs(n))}" y2="{_f(ys(lo))}" '
            f'stroke="{color}" stroke-opacity="0.6" stroke-width="3">'
            f"<title>after {n} problems: sequence [{lo:+.4f}, {hi:+.4f}], estimate {e}</title></line>"
        )
    pts = [(n, est) for n, _, _, est in looks if est is not None]
    if pts:
        line = " ".join(f"{_f(xs(n))},{_f(ys(v))}" for n, v in pts)
        out.append(
            f'<polyline class="estimate" points="{line}" fill="none" stroke="{color}" '
            'stroke-width="2"/>'
        )
        out += [
            f'<circle class="estimate-pt" cx="{_f(xs(n))}" cy="{_f(ys(v))}" r="2.5" fill="{color}"/>'
            for n, v in pts
        ]
    if looks:
        n = looks[-1][0]
        out.append(
            f'<line class="stop" x1="{_f(xs(n))}" y1="{_T}" x2="{_f(xs(n))}" y2="{_H - _B}" '
            f'stroke="#333" stroke-dasharray="2,3"><title>stopped after {n} problems</title></line>'
        )
    return out
