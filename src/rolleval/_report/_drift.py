"""The blocks and HTML page of a drift measurement (``DriftResult.to_dict()``).

:func:`drift_doc` gives the report model's blocks (text and Markdown render them through
:mod:`rolleval._report._render`); :func:`drift_html` one self-contained page with the same
blocks, a histogram of the per-token KL divergence and the worst tokens in context.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

from ._document import Block, Bullets, Details, Para, Table, Title, f4, s4
from ._html import blocks_html
from ._html_assets import CSS
from ._svg import bars_svg

__all__ = ["drift_doc", "drift_html"]


def _g(v: float | None, digits: int = 4) -> str:
    return "N/A" if v is None else f"{v:.{digits}g}"


def _interval(e: dict[str, Any]) -> str:
    if e.get("low") is None:
        return f"N/A: {e.get('reason') or e.get('status')}"
    cell = f"[{f4(e['low'])}, {f4(e['high'])}]"
    return cell + (" degenerate" if e.get("status") == "degenerate" else "")


def _alternatives(top: list[Any]) -> str:
    return ", ".join(f"{str(t)!r} {math.exp(v):.3f}" for t, v in top)


def _headline(data: dict[str, Any]) -> Table:
    iv, tl = data["intervals"], data["token_level"]
    level = round(100 * data["method"]["confidence_level"])
    n = tl["n_tokens"]
    agree = f"{tl['n_top1_agree']}/{n}" if n else "N/A"
    rows = [
        [
            "mean KLD (nats)",
            f4(data["mean_kld"]),
            _interval(iv["mean_kld"]),
            f4(tl["mean_kld"]),
            f"{n} tokens",
        ],
        [
            "top-1 agreement",
            f4(data["top1_agreement"]),
            _interval(iv["top1_agreement"]),
            f4(tl["top1_agreement"]),
            agree,
        ],
        [
            "delta NLL (nats)",
            s4(data["delta_nll"]),
            _interval(iv["delta_nll"]),
            s4(tl["delta_nll"]),
            f"{n} tokens",
        ],
    ]
    return Table(
        ["figure", "over texts", f"{level}% CI", "over tokens", "num/den"],
        rows,
    )


def drift_doc(data: dict[str, Any]) -> list[Block]:
    """The blocks of a drift measurement."""
    verdict = data["verdict"]
    out: list[Block] = [
        Title(
            f"rolleval drift: {verdict.replace('_', ' ').upper()} (exit {data['exit_code']})",
            verdict=verdict,
        ),
        Para(
            f"baseline {_side(data['baseline'])}; candidate {_side(data['candidate'])}; "
            f"{data['n_texts']} texts, {data['n_tokens']} scored tokens; delta NLL is the "
            "candidate's NLL minus the baseline's (+ = candidate worse)"
        ),
        Para(f"why: {data['reason']}"),
        _headline(data),
    ]
    planning = _planning(data)
    if planning:
        out.append(Para(planning))
    out += _token_blocks(data["token_level"])
    if data.get("warnings"):
        out.append(Bullets([f"WARNING: {w}" for w in data["warnings"]]))
    out += _worst_blocks(data.get("worst_tokens") or [])
    out.append(_texts_block(data.get("texts") or []))
    out.append(_method_block(data["method"]))
    return out


def _token_blocks(tl: dict[str, Any]) -> list[Block]:
    """The per-token KLD percentiles and the token-level ratios."""
    pct = tl["kld_percentiles"]
    return [
        Table(
            ["per-token KLD", "p50", "p90", "p95", "p99", "p99.9", "max"],
            [
                [
                    "nats",
                    *(_g(pct.get(k)) for k in ("p50", "p90", "p95", "p99", "p99.9")),
                    _g(tl["max_kld"]),
                ]
            ],
        ),
        Para(
            f"PPL(candidate)/PPL(baseline) over tokens {_g(tl['ppl_ratio'])}; exact KL on "
            f"{tl['n_exact']}/{tl['n_tokens']} tokens; baseline mass outside the compared "
            f"tokens {_g(tl['baseline_tail_mean'])} on average"
        ),
    ]


def _worst_blocks(worst: list[dict[str, Any]]) -> list[Block]:
    """The five tokens with the largest KL divergence, in context, with both sides' tops."""
    if not worst:
        return []
    return [
        Title("tokens with the largest KL divergence", 2),
        Table(
            ["text", "pos", "context", "token", "KLD", "dNLL", "baseline top", "candidate top"],
            [
                [
                    str(w["text_id"]),
                    str(w["position"]),
                    repr(w["context"][-30:]),
                    repr(w["token"]),
                    f4(w["kld"]),
                    s4(w["delta_nll"]),
                    _alternatives(w["baseline_top"]),
                    _alternatives(w["candidate_top"]),
                ]
                for w in worst[:5]
            ],
            left=4,
        ),
    ]


def _texts_block(texts: list[dict[str, Any]]) -> Block:
    """The per-text figures, largest mean KLD first (20 at most)."""
    texts = sorted(texts, key=lambda t: -(t.get("mean_kld") or 0.0))
    return Details(
        f"per text ({len(texts)}; largest mean KLD first)",
        [
            Table(
                ["text", "tokens", "mean KLD", "top-1 agreement", "delta NLL", "max KLD"],
                [
                    [
                        str(t["id"]),
                        str(t["n_tokens"]),
                        f4(t["mean_kld"]),
                        f"{t['n_top1_agree']}/{t['n_tokens']}",
                        s4(t["delta_nll"]),
                        f4(t["max_kld"]),
                    ]
                    for t in texts[:20]
                ],
            )
        ],
    )


def _method_block(m: dict[str, Any]) -> Block:
    """How the figures were measured: scoring, tail rule, texts, interval."""
    return Details(
        "method",
        [
            Para(
                f"teacher forcing: both sides score the same tokens; baseline scored from "
                f"{m['baseline_scoring']}, candidate from {m['candidate_scoring']} "
                f"(K = {m['top_logprobs']}); alternatives matched by {m['keyed_by']}"
            ),
            Para(f"tail rule: {m['tail_rule']}"),
            Para(f"texts: {_continuation(m.get('continuation') or {})}"),
            Para(
                f"unit {m['unit']}: per-text means, then {m['interval']}, confidence "
                f"{m['confidence_level']:g}, {m['n_resamples']} resamples, seed {m['seed']}; "
                f"threshold {m['threshold']:g} nats on the mean KL divergence"
            ),
        ],
    )


def _planning(data: dict[str, Any]) -> str:
    plan = data.get("planning") or {}
    if not plan:
        return ""
    power = f"power {plan.get('power', 0.8):g}"
    if plan.get("texts_needed") is None:
        return f"texts needed to decide: N/A ({plan.get('reason')})"
    side = str(plan.get("side") or "").replace("_", " ")
    return (
        f"texts needed to decide ({side}, {power}, at this spread and mean): "
        f"{plan['texts_needed']}; measured on {data['n_texts']}"
    )


def _continuation(c: dict[str, Any]) -> str:
    kind = c.get("kind", "none")
    if kind == "sampled":
        sent = ", ".join(f"{k} {v}" for k, v in (c.get("sent") or {}).items())
        return (
            f"each prompt followed by one continuation sampled from the baseline (seed "
            f"{c.get('seed')}, per prompt derived from it; {sent})"
        )
    if kind == "reference":
        return "each prompt followed by its reference answer"
    return "scored as given"


def _side(info: dict[str, Any]) -> str:
    if info.get("gguf"):
        return f"{info.get('model_file') or info['gguf']} (served by rolleval)"
    return f"{info.get('endpoint')} model {info.get('model')}"


def _histogram_svg(data: dict[str, Any]) -> str:
    hist = data.get("kld_histogram") or {}
    edges, counts = hist.get("edges") or [], hist.get("counts") or []
    bars = [(f"<={edges[i + 1]:.0e}", float(c)) for i, c in enumerate(counts)]
    return bars_svg(bars, label="per-token KL divergence (nats, log bins)", ylabel="tokens")


def drift_html(data: dict[str, Any]) -> str:
    """One self-contained page (no script, no network request)."""
    verdict = data["verdict"]
    tone = {"above_threshold": "bad", "within_threshold": "good"}.get(verdict, "warn")
    banner = (
        f'<div class="banner {tone}" id="verdict"><h1>rolleval drift: '
        f'<span class="badge {tone}">{escape(verdict.replace("_", " "))}</span> '
        f"(exit {data['exit_code']})</h1><ul><li>mean KLD <b>{escape(f4(data['mean_kld']))}</b> "
        f"nats {escape(_interval(data['intervals']['mean_kld']))}, threshold "
        f"{data['method']['threshold']:g}; top-1 agreement {escape(f4(data['top1_agreement']))}; "
        f"delta NLL {escape(s4(data['delta_nll']))}</li></ul></div>"
    )
    figure = (
        f"<figure>{_histogram_svg(data)}<figcaption>tokens per KL-divergence bin "
        f"({data['n_tokens']} tokens)</figcaption></figure>"
    )
    body = banner + figure + blocks_html(drift_doc(data)[1:])
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>rolleval drift</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
