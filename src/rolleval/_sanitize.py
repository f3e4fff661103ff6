"""Text that leaves rolleval: secrets redacted, terminal control characters made inert.

Two jobs, both applied where text is written or printed:

* :func:`redact` replaces every registered secret (the API key) in every form it can take
  in an error message, a server's echo, a traceback or what model-written code printed: as
  is, reversed, as Python ``repr``/JSON escapes it, URL-encoded, hex-encoded (either case),
  and base64-encoded at any byte alignment. The client registers
  the key when it reads it (:func:`register_secret`), so the CLI's error path, ``show`` and
  the records all redact the same forms. Redaction happens before any truncation.
* :func:`terminal_safe` makes model output and server error bodies inert on a terminal:
  C0/C1 control characters (ESC, so CSI and OSC sequences; BEL; NUL; DEL...) and the Unicode
  bidirectional overrides and isolates are shown as visible ``\\x1b`` / ``\\u202e`` escapes.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from urllib.parse import quote, quote_plus

__all__ = [
    "REDACTED",
    "check_api_key",
    "redact",
    "redact_tail",
    "redact_value",
    "register_forms",
    "register_secret",
    "registered_forms",
    "secret_forms",
    "terminal_safe",
]

REDACTED = "***"

_lock = threading.Lock()
_forms: tuple[str, ...] = ()


def _b64_cores(data: bytes) -> set[str]:
    """Base64 text of ``data`` as it appears inside the encoding of any longer byte string:
    for each of the 3 alignments, the characters that depend on ``data`` alone."""
    out: set[str] = set()
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * offset + data).decode("ascii")
            start = -(-8 * offset // 6)  # ceil: first char made only of data bits
            stop = 8 * (offset + len(data)) // 6  # floor: past the last such char
            core = text[start:stop]
            if len(core) >= 8:
                out.add(core)
    return out


def secret_forms(secret: str) -> tuple[str, ...]:
    """Every form of ``secret`` :func:`redact` replaces, longest first."""
    if not secret:
        return ()
    hexed = secret.encode("utf-8").hex()
    forms = {
        secret,
        secret[::-1],
        hexed,
        hexed.upper(),
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        quote(secret),
    }
    forms |= _b64_cores(secret.encode("utf-8"))
    forms.discard("")
    return tuple(sorted(forms, key=len, reverse=True))


def register_secret(secret: str) -> None:
    """Redact ``secret`` (in all its forms) from everything rolleval writes or prints from now
    on in this process."""
    global _forms
    new = [f for f in secret_forms(secret) if f not in _forms]
    if not new:
        return
    with _lock:
        _forms = tuple(sorted({*_forms, *new}, key=len, reverse=True))


def registered_forms() -> tuple[str, ...]:
    """Every form registered so far: what a worker process needs to redact the same way
    (:func:`register_forms`)."""
    return _forms


def register_forms(forms: tuple[str, ...] | list[str]) -> None:
    """Redact these forms (from :func:`registered_forms` of another process) too."""
    global _forms
    with _lock:
        _forms = tuple(sorted({*_forms, *(f for f in forms if f)}, key=len, reverse=True))


def redact(text: str) -> str:
    """``text`` with every form of every registered secret replaced by ``***``."""
    for form in _forms:
        if form in text:
            text = text.replace(form, REDACTED)
    return text


def redact_tail(text: str) -> str:
    """:func:`redact`, and also drop a trailing *beginning* of a secret form: for text that
    was cut from something longer, where a secret may straddle the cut."""
    text = redact(text)
    for form in _forms:
        for size in range(len(form) - 1, 0, -1):
            if text.endswith(form[:size]):
                return text[:-size] + REDACTED
    return text


def redact_value(value: object) -> object:
    """:func:`redact` applied to every string (keys included) inside JSON-like ``value``."""
    if not _forms:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


def check_api_key(value: str, where: str) -> str:
    """The key with surrounding whitespace stripped; refuse (``UsageError``, exit 2) an empty
    key or one holding a control, whitespace or non-ASCII character (an HTTP header cannot
    carry it). The message names the position, never the key."""
    from .errors import UsageError

    key = value.strip()
    if not key:
        raise UsageError(f"{where} is empty; export the API key there")
    for position, char in enumerate(key):
        if not 0x21 <= ord(char) <= 0x7E:
            kind = "a control character" if _is_control(char) else "a space or non-ASCII character"
            register_secret(key)
            raise UsageError(
                f"{where} holds {kind} ({_escape(char)}) at position {position + 1} of the key; "
                "an HTTP header cannot carry it: re-export the key without it"
            )
    return key


# --------------------------------------------------------------------------- terminal text

#: C0 controls (tab and newline are handled by ``one_line``), DEL, C1 controls, and the
#: Unicode bidi embeddings/overrides/isolates and marks that reorder displayed text.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
_UNSAFE_LINE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)


def _is_control(char: str) -> bool:
    return ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F


def _escape(char: str) -> str:
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


#: Whole ANSI escape sequences: CSI (``ESC [`` parameters final), OSC (``ESC ]`` payload,
#: ended by BEL or ``ESC \\``), and other two-character ``ESC`` sequences.
_SEQUENCES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")


def terminal_safe(text: str, *, one_line: bool = False, strip: bool = False) -> str:
    """``text`` with every character that could drive a terminal made inert.

    By default each one is shown as an escape (``\\x1b``, ``\\u202e``): model output and
    server messages, where the reader should see what was there. ``strip`` removes them
    instead, escape sequences whole (a CSI sequence's parameters, an OSC sequence's
    payload): rendered reports, where only the readable text is wanted. Kept as is:
    printable text, tabs and newlines (``one_line``: newlines and tabs made inert too, for
    messages that must stay one line).
    """
    pattern = _UNSAFE_LINE if one_line else _UNSAFE
    if strip:
        return pattern.sub("", _SEQUENCES.sub("", text))
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: _escape(m.group()), text)
