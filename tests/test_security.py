from __future__ import annotations

from gateway.kernel.security import SecretBox, hash_token, new_api_key


def test_secret_box_round_trip_and_key_separation() -> None:
    box = SecretBox(b"a" * 32)
    sealed = box.encrypt("whsec_abc")
    assert "whsec_abc" not in sealed
    assert box.decrypt(sealed) == "whsec_abc"
    other = SecretBox(b"b" * 32)
    try:
        other.decrypt(sealed)
    except ValueError as exc:
        assert "GATEWAY_SECRET_KEY" in str(exc)
    else:
        raise AssertionError("a different key must not decrypt")


def test_signed_tokens_detect_tampering() -> None:
    box = SecretBox(b"a" * 32)
    token = box.sign(b'["scope",[1]]')
    assert box.unsign(token) == b'["scope",[1]]'
    tampered = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    assert box.unsign(tampered) is None
    assert box.unsign("!!!") is None
    assert box.unsign("") is None


def test_api_keys_are_random_and_hashed() -> None:
    a, b = new_api_key(), new_api_key()
    assert a != b and len(a) > 40
    assert hash_token(a) != a and len(hash_token(a)) == 64


def test_new_uuid_is_a_time_ordered_version_7_uuid() -> None:
    import time
    import uuid

    from gateway.kernel.ids import new_uuid

    before = int(time.time() * 1000)
    made = [new_uuid() for _ in range(2000)]
    after = int(time.time() * 1000)
    assert len(set(made)) == len(made)
    for value in made:
        parsed = uuid.UUID(value)
        assert str(parsed) == value  # canonical lower-case 8-4-4-4-12 form
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
        assert before <= parsed.int >> 80 <= after  # its first 48 bits: Unix milliseconds
    # ids made in later milliseconds sort after earlier ones
    assert made[0][:13] <= made[-1][:13]
