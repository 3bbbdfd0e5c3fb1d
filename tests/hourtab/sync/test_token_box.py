"""Tokens at rest: Fernet with the configured key(s) or one derived from the secret key."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from hourtab.sync.errors import InvalidConnection, TokenUnreadable
from hourtab.sync.token_box import TokenBox, clean_token, hint, scrub

TOKEN = "tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0"


def test_sealed_tokens_open_only_with_the_key():
    box = TokenBox.from_settings("", "secret one")
    sealed = box.seal(TOKEN)
    assert TOKEN.encode() not in sealed and box.open(sealed) == TOKEN
    assert TokenBox.from_settings("", "secret one").open(sealed) == TOKEN          # derived the same way
    with pytest.raises(TokenUnreadable, match="enter the token again"):
        TokenBox.from_settings("", "secret two").open(sealed)


def test_the_encryption_key_rotates_without_reentering_tokens():
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    sealed = TokenBox.from_settings(old, "ignored").seal(TOKEN)
    rotated = TokenBox.from_settings(f"{new}, {old}", "ignored")
    assert rotated.open(sealed) == TOKEN
    resealed = rotated.seal(TOKEN)
    assert TokenBox.from_settings(new, "ignored").open(resealed) == TOKEN
    with pytest.raises(TokenUnreadable):
        TokenBox.from_settings(old, "ignored").open(resealed)
    with pytest.raises(InvalidConnection, match="HOURTAB_ENCRYPTION_KEY must be Fernet keys"):
        TokenBox.from_settings("not-a-key", "ignored")


def test_what_is_shown_and_refused():
    assert hint(TOKEN) == "…b1a0" and hint("short") == "…"
    assert clean_token(f"  {TOKEN}\n") == TOKEN
    for bad in ("", "   ", "two words", "x" * 501):
        with pytest.raises(InvalidConnection):
            clean_token(bad)
    assert scrub(f"GET failed for {TOKEN}:api_token", TOKEN) == "GET failed for [token]:api_token"
