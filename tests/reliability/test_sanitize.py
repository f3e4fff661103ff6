"""rolleval._sanitize: every form of a secret is redacted, a secret cut at the end of an
excerpt leaves nothing behind, unusable keys are refused without being shown."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

import pytest

from rolleval._sanitize import check_api_key, redact, redact_tail, register_secret, secret_forms
from rolleval.client._errors import BODY_EXCERPT_CHARS, BODY_SCAN_BYTES, body_excerpt
from rolleval.errors import UsageError

SECRET = "tk-Sanit1ze/Te+st=Key%\\x'Q\"9"


@pytest.fixture(autouse=True, scope="module")
def _registered() -> None:
    register_secret(SECRET)


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_base64_of_any_enclosing_text_is_redacted(offset, encode) -> None:
    blob = encode(("u" * offset + ":" + SECRET + ":tail").encode()).decode()
    redacted = redact(blob)
    assert redacted != blob and "***" in redacted
    # what is left is only the few characters that mix secret bits with enclosing bits
    assert len(redacted) <= len(blob) - len(SECRET) * 4 // 3 + 3 + 8


@pytest.mark.parametrize(
    "form",
    [
        SECRET,
        repr(SECRET),
        ascii(SECRET),
        json.dumps(SECRET),
        quote(SECRET, safe=""),
        quote_plus(SECRET),
        repr(SECRET + "\n"),
        repr({"authorization": f"Bearer {SECRET}"}),
    ],
    ids=["raw", "repr", "ascii", "json", "urlencoded", "urlencoded_plus", "repr_newline", "dict"],
)
def test_every_textual_form_is_redacted(form) -> None:
    redacted = redact(f"before {form} after")
    assert "***" in redacted
    assert not any(SECRET[i : i + 8] in redacted for i in range(len(SECRET) - 7))


def test_forms_are_longest_first_and_include_the_raw_key() -> None:
    forms = secret_forms(SECRET)
    assert SECRET in forms and list(forms) == sorted(forms, key=len, reverse=True)


@pytest.mark.parametrize("cut", range(1, len(SECRET)))
def test_a_secret_cut_at_the_end_leaves_no_prefix(cut) -> None:
    text = redact_tail("error body ... Bearer " + SECRET[:cut])
    assert text.endswith("***") and SECRET[: min(cut, 4)] not in text[-6:].replace("***", "")


@pytest.mark.parametrize(
    "pad", [BODY_EXCERPT_CHARS - 20, BODY_EXCERPT_CHARS - 3, BODY_SCAN_BYTES - 10]
)
def test_body_excerpt_redacts_before_cutting(pad) -> None:
    body = (" " * pad + "Bearer " + SECRET + " more").encode()
    excerpt = body_excerpt(body)
    assert len(excerpt) <= BODY_EXCERPT_CHARS
    assert not any(SECRET[i : i + 4] in excerpt for i in range(len(SECRET) - 3))


def test_check_api_key_strips_and_refuses_without_showing_the_key() -> None:
    assert check_api_key(f"  {SECRET}\n", "KEYVAR") == SECRET
    for bad in (SECRET[:6] + "\x1b" + SECRET[6:], SECRET + "\x7f", SECRET[:4] + " " + SECRET[4:]):
        with pytest.raises(UsageError) as info:
            check_api_key(bad, "KEYVAR")
        assert "KEYVAR" in str(info.value) and SECRET[:8] not in str(info.value)
    with pytest.raises(UsageError, match="empty"):
        check_api_key(" \n", "KEYVAR")
