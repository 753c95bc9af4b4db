"""The request headers kept with an accepted delivery: credentials redacted by name and the URL
token wherever it appears, in both the template path and the header-by-header one, bounded."""

from __future__ import annotations

from gateway.foundation.backends.delivery_rows import headers_of
from gateway.webhook_gateway.ingress.headers import RawHeaders
from gateway.webhook_gateway.ingress.stored_headers import MAX_STORED, MAX_VALUE, stored_headers
from gateway.webhook_gateway.signatures import SCHEMES


def _stored(raw: list[tuple[bytes, bytes]], token: str | None = None) -> dict[str, str]:
    return headers_of(stored_headers(RawHeaders(raw), token))


def test_credentials_and_every_schemes_signature_headers_are_redacted() -> None:
    secret_names = [h for scheme in SCHEMES.values() for h in scheme.signature_headers]
    secret_names += ["authorization", "cookie", "x-gitlab-token", "x-api-key"]
    raw = [(name.encode(), b"s3cret") for name in secret_names]
    raw += [(b"user-agent", b"GitHub-Hookshot/1"), (b"x-github-delivery", b"d-1")]
    for _ in range(2):  # the second time from the cached template
        stored = _stored(raw)
        assert {stored[name] for name in secret_names} == {"[redacted]"}
        assert stored["user-agent"] == "GitHub-Hookshot/1" and stored["x-github-delivery"] == "d-1"


def test_values_are_kept_verbatim_even_with_format_characters() -> None:
    raw = [(b"x-a", b"%s %(x-a)b %%"), (b"x-b", b"caf\xe9")]
    assert _stored(raw) == {"x-a": "%s %(x-a)b %%", "x-b": "café"}


def test_names_a_template_cannot_hold_take_the_slow_path() -> None:
    raw = [(b"x-odd(name)", b"v"), (b"x-pct%", b"w"), (b"authorization", b"Bearer t")]
    assert _stored(raw) == {"x-odd(name)": "v", "x-pct%": "w", "authorization": "[redacted]"}


def test_the_url_token_is_redacted_in_any_value() -> None:
    raw = [(b"referer", b"https://x/webhooks/w/wh_1/TOKEN123"), (b"x-ok", b"fine")]
    assert _stored(raw, "TOKEN123") == {"referer": "[redacted]", "x-ok": "fine"}
    assert _stored(raw, None)["referer"].endswith("TOKEN123")  # other modes have no path token


def test_long_values_are_cut_and_the_total_bounded() -> None:
    raw = [(b"x-%d" % n, b"v" * 3000) for n in range(10)]
    stored = _stored(raw)
    assert all(len(value) == MAX_VALUE for value in stored.values())
    assert len(stored_headers(RawHeaders(raw))) <= MAX_STORED
    assert 0 < len(stored) < 10
