"""The password file: one ``user:bcrypt-hash`` line per user, as ``relaymq passwd`` writes it.

Why bcrypt: a stolen password file must not give passwords away cheaply; bcrypt's cost factor
makes every guess expensive (cost 12, about a quarter of a second, by default). The price is
that every check is expensive for the broker too, so successful checks are remembered in
memory for ``CACHE_SECONDS`` (an HMAC of the stored hash and the password, under a key that
lives only in this process): a reconnect storm of known clients costs one bcrypt per user, not
one per connect. ``cached()`` answers from that memory only, without bcrypt, so a server can
answer at once when it can and run ``check()`` on a thread otherwise.

Why a dummy check for unknown users: answering "no such user" faster than "wrong password"
tells an attacker which user names exist. ``check`` spends the same bcrypt work either way.

The format is deliberately close to mosquitto's password file (``user:hash``), with bcrypt
(``$2b$``; ``$2a$``/``$2y$`` are read too) as the only hash. Blank lines and lines starting
with ``#`` are ignored, so a user name may not start with ``#``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable

import bcrypt

from relaymq.auth.private_file import write_private

#: bcrypt cost used when none is given: 2**12 rounds.
DEFAULT_COST = 12
#: bcrypt only looks at the first 72 bytes of a password; longer ones are refused, not cut.
MAX_PASSWORD_BYTES = 72
_MIN_COST, _MAX_COST = 4, 31
#: How long a successful check is remembered (seconds).
CACHE_SECONDS = 120.0
_HASH = re.compile(r"^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$")


class PasswordFileError(ValueError):
    """A password file cannot be read or has a malformed line; the text names the file and line."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


def validate_username(user: str) -> None:
    """Raise ValueError for a user name the file format cannot hold."""
    if not user:
        raise ValueError("the user name is empty")
    if ":" in user:
        raise ValueError(f"the user name {user!r} contains ':'")
    if user.startswith("#"):
        raise ValueError(f"the user name {user!r} starts with '#' (that would be a comment)")
    if user != user.strip() or any(ord(c) < 0x20 or c == "\x7f" for c in user):
        raise ValueError(f"the user name {user!r} has surrounding spaces or control characters")


class PasswordFile:
    """The users and their bcrypt hashes, in file order, with a cache of successful checks."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._hashes: dict[str, bytes] = {}
        # user -> (HMAC(hash, password) of the last password that passed bcrypt for this hash,
        # the clock time until which it is trusted without bcrypt).
        self._verified: dict[str, tuple[bytes, float]] = {}
        self._cache_key = secrets.token_bytes(32)
        self._dummy_hash: bytes | None = None
        self._clock = clock

    @classmethod
    def load(cls, path: str) -> PasswordFile:
        """Read a password file; raise PasswordFileError naming the file and line on a bad line."""
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except OSError as error:
            raise PasswordFileError(path, f"cannot read: {error.strerror or error}") from None
        except UnicodeDecodeError:
            raise PasswordFileError(path, "not a UTF-8 text file") from None
        result = cls()
        first_seen: dict[str, int] = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip() or line.startswith("#"):
                continue
            user, colon, hashed = line.partition(":")
            if not colon:
                raise PasswordFileError(path, "expected user:hash", number)
            try:
                validate_username(user)
            except ValueError as error:
                raise PasswordFileError(path, str(error), number) from None
            if not _HASH.match(hashed):
                raise PasswordFileError(path, f"the hash for {user!r} is not a bcrypt hash ($2b$...)", number)
            if user in first_seen:
                raise PasswordFileError(path, f"user {user!r} is already on line {first_seen[user]}", number)
            first_seen[user] = number
            result._hashes[user] = hashed.encode("ascii")
        return result

    def replace_with(self, fresh: PasswordFile) -> None:
        """Take the users of ``fresh`` (the file read again: SIGHUP), in place, so every holder
        of this object sees them; a remembered check survives only while its hash is unchanged."""
        self._verified = {user: seen for user, seen in self._verified.items()
                          if fresh._hashes.get(user) == self._hashes.get(user)}
        self._hashes = dict(fresh._hashes)
        self._dummy_hash = None

    def users(self) -> list[str]:
        """The user names, in file order."""
        return list(self._hashes)

    def __contains__(self, user: object) -> bool:
        return user in self._hashes

    def __len__(self) -> int:
        return len(self._hashes)

    def check(self, user: str, password: bytes | None) -> bool:
        """Is ``password`` right for ``user``? Unknown users and missing passwords are False,
        after the same bcrypt work as a wrong password, so timing does not reveal user names."""
        stored = self._hashes.get(user)
        if stored is None or password is None or len(password) > MAX_PASSWORD_BYTES:
            self._spend(password)
            return False
        if self.cached(user, password):
            return True
        if bcrypt.checkpw(password, stored):
            self._verified[user] = (self._digest(stored, password), self._clock() + CACHE_SECONDS)
            return True
        return False

    def cached(self, user: str, password: bytes | None) -> bool:
        """True when this very password passed ``check`` for ``user`` less than
        ``CACHE_SECONDS`` ago (and the user's hash has not changed since). No bcrypt: fast
        enough for an event loop. False means "ask ``check``", not "wrong"."""
        remembered = self._verified.get(user)
        stored = self._hashes.get(user)
        if remembered is None or stored is None or password is None or len(password) > MAX_PASSWORD_BYTES:
            return False
        digest, until = remembered
        if self._clock() >= until:
            return False
        return hmac.compare_digest(digest, self._digest(stored, password))

    def _digest(self, stored: bytes, password: bytes) -> bytes:
        return hmac.new(self._cache_key, stored + b"\0" + password, hashlib.sha256).digest()

    def set(self, user: str, password: str | bytes, cost: int = DEFAULT_COST) -> None:
        """Add the user or change their password (hashed now with bcrypt at ``cost``)."""
        validate_username(user)
        secret = password.encode("utf-8") if isinstance(password, str) else password
        if not secret:
            raise ValueError("the password is empty")
        if len(secret) > MAX_PASSWORD_BYTES:
            raise ValueError(f"the password is longer than {MAX_PASSWORD_BYTES} bytes (bcrypt's limit)")
        if not _MIN_COST <= cost <= _MAX_COST:
            raise ValueError(f"the bcrypt cost must be in {_MIN_COST}..{_MAX_COST}, got {cost}")
        self._hashes[user] = bcrypt.hashpw(secret, bcrypt.gensalt(rounds=cost))
        self._verified.pop(user, None)

    def delete(self, user: str) -> None:
        """Remove the user; KeyError if there is no such user."""
        del self._hashes[user]
        self._verified.pop(user, None)

    def save(self, path: str) -> None:
        """Write the file atomically (temporary file in the same directory, then rename), mode
        0600: a reader never sees half a file, and only the owner can read the hashes."""
        write_private(path, "".join(f"{user}:{hashed.decode('ascii')}\n" for user, hashed in self._hashes.items()))

    def _spend(self, password: bytes | None) -> None:
        """Do one bcrypt check against a hash nobody knows the password of."""
        if self._dummy_hash is None:
            # Same cost as the real hashes ("$2b$12$..." -> 12), so the work matches a real check.
            cost = max((int(hashed[4:6]) for hashed in self._hashes.values()), default=DEFAULT_COST)
            self._dummy_hash = bcrypt.hashpw(secrets.token_hex(16).encode("ascii"), bcrypt.gensalt(rounds=cost))
        bcrypt.checkpw((password or b"-")[:MAX_PASSWORD_BYTES], self._dummy_hash)
