"""API tokens at rest: Fernet (``cryptography``), never stored, shown or logged in the clear.

The key comes from ``HOURTAB_ENCRYPTION_KEY`` (one or more Fernet keys, comma-separated: the first
encrypts, every one decrypts, so a key can be rotated without re-entering tokens). Without it the key
is derived from the secret key with HKDF, so an installation works out of the box; changing the secret
key then makes stored tokens unreadable, which pauses their connections until they are entered again.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from hourtab.sync.errors import InvalidConnection, TokenUnreadable

#: Longest token accepted; every tracker's tokens are far shorter.
MAX_TOKEN_LENGTH = 500
#: Text that stands in for a token wherever one might otherwise have been written.
REDACTED = "[token]"


class TokenBox:
    """Seals tokens for the database and opens them for a sync; holds the key, never a token."""

    def __init__(self, keys: Iterable[bytes]) -> None:
        fernets = [Fernet(k) for k in keys]
        if not fernets:
            raise ValueError("at least one key is needed")
        self._fernet = MultiFernet(fernets)

    @classmethod
    def from_settings(cls, encryption_key: str, secret_key: str) -> TokenBox:
        """The box an installation uses: ``HOURTAB_ENCRYPTION_KEY`` if set, else a derived key."""
        if encryption_key.strip():
            keys = [k.strip().encode() for k in encryption_key.split(",") if k.strip()]
            try:
                return cls(keys)
            except ValueError as e:
                raise InvalidConnection("HOURTAB_ENCRYPTION_KEY must be Fernet keys (32 url-safe base64 bytes "
                                        "each, comma-separated), e.g. the output of "
                                        "`python -c 'from cryptography.fernet import Fernet; "
                                        "print(Fernet.generate_key().decode())'`.") from e
        return cls([derived_key(secret_key)])

    def seal(self, token: str) -> bytes:
        return self._fernet.encrypt(token.encode("utf-8"))

    def open(self, sealed: bytes) -> str:
        try:
            return self._fernet.decrypt(bytes(sealed)).decode("utf-8")
        except InvalidToken as e:
            raise TokenUnreadable("The stored API token cannot be decrypted with this installation's key "
                                  "(HOURTAB_ENCRYPTION_KEY or the secret key changed); enter the token "
                                  "again.") from e


def derived_key(secret_key: str) -> bytes:
    """A Fernet key derived from the secret key (HKDF-SHA256, a purpose-bound ``info``)."""
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
               info=b"hourtab sync api tokens v1").derive(secret_key.encode("utf-8"))
    return base64.urlsafe_b64encode(raw)


def clean_token(token: str) -> str:
    """The token as typed or piped, trimmed; refused when it cannot be one (empty, spaces, too long)."""
    token = (token or "").strip()
    if not token:
        raise InvalidConnection("The API token is empty.")
    if len(token) > MAX_TOKEN_LENGTH or any(c.isspace() or not c.isprintable() for c in token):
        raise InvalidConnection("That does not look like an API token (it has spaces or is too long); "
                                "paste the token alone.")
    return token


def hint(token: str) -> str:
    """What pages show of a token: its last four characters, and only for tokens long enough."""
    return f"…{token[-4:]}" if len(token) >= 16 else "…"


def scrub(text: str, *secrets: str) -> str:
    """``text`` with every secret replaced, as a last guard on messages built from other text."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text
