"""Find every number of a JSON result in a rendering (shared by the format and browser tests)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

#: Keys whose numbers are not looked for: a metric's ``params`` (k, tau) are spelled in its
#: name (pass@4, G-Pass@4_0.5). Of ``movers``, the five that moved most are looked for (the
#: JSON and the HTML problem browser hold every problem).
SKIP_KEYS = {"params"}

_TOKEN = re.compile(r"[-+±]?\d+(?:\.\d+)?(?:e[-+]?\d+)?%?")


def walk(value: Any, path: str = "") -> list[tuple[str, float]]:
    """Every number in ``value`` (bools excluded), with its JSON path."""
    out: list[tuple[str, float]] = []
    if isinstance(value, bool) or value is None:
        return out
    if isinstance(value, (int, float)):
        return [(path, float(value))]
    if isinstance(value, dict):
        for k, v in value.items():
            if k in SKIP_KEYS:
                continue
            out += walk(v, f"{path}.{k}")
    elif isinstance(value, list):
        items = value
        if path.endswith(".movers"):
            items = [m for m in value if (m.get("delta") or 0) != 0][:5]
        for i, v in enumerate(items):
            out += walk(v, f"{path}[{i}]")
    return out


def tokens(text: str) -> list[tuple[float, float, bool]]:
    """Numbers printed in ``text``: (value, half a unit in the last printed digit, precise).

    A token is *precise* when it has at least three significant digits or three decimals of a
    fraction (so "0.5" does not stand for 0.5469)."""
    out = []
    for m in _TOKEN.finditer(text):
        tok = m.group(0).lstrip("±")
        pct = tok.endswith("%")
        d = Decimal(tok.rstrip("%"))
        exp = d.as_tuple().exponent
        assert isinstance(exp, int)
        digits = len(d.as_tuple().digits)
        half = 0.5 * 10.0**exp
        value = float(d)
        if pct:
            value, half, exp = value / 100, half / 100, exp - 2
        out.append((value, half, digits >= 3 or exp <= -3))
    return out


def missing(data: Any, text: str) -> list[tuple[str, float]]:
    """The numbers of ``data`` that ``text`` does not show (exactly, or to its printed precision)."""
    toks = tokens(text)
    exact = {v for v, _, _ in toks}
    gone = []
    for path, v in walk(data):
        if v in exact or -v in exact:
            continue
        if any(p and abs(abs(t) - abs(v)) <= h * (1 + 1e-9) for t, h, p in toks):
            continue
        gone.append((path, v))
    return gone
