"""relaymq.auth.passwords.PasswordFile: loading, checking, editing and saving, on real files.

Requirement (access brief): `load(path)` with a clear error naming the file and line number
for a malformed line; `check(user, password)` via bcrypt, unknown user -> False; `set`,
`delete`, `save`, `users`; successful checks are cached (keyed by hash and password digest).
bcrypt cost 4 keeps these tests cheap.
"""

from __future__ import annotations

import stat
from pathlib import Path

import bcrypt
import pytest

from relaymq.auth.passwords import PasswordFile, PasswordFileError

HASH = bcrypt.hashpw(b"right", bcrypt.gensalt(rounds=4)).decode()


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "passwords"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("alice\n", 1),                                   # no ':'
        (f"alice:{HASH}\n:{HASH}\n", 2),                  # empty user name
        (f"alice:{HASH}\nbob:plaintext\n", 2),            # not a bcrypt hash
        (f"alice:{HASH}\n\n# comment\nalice:{HASH}\n", 4),  # same user twice
        (f"alice:{HASH[:-1]}\n", 1),                      # truncated hash
        (f" alice:{HASH}\n", 1),                          # user name with a leading space
    ],
    # HASH has a random salt: ids from the text would differ between pytest-xdist's workers
    ids=["no-colon", "empty-user", "not-bcrypt", "user-twice", "truncated-hash", "leading-space"],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    """Brief: a malformed line gives a clear error naming the file and the line number."""
    path = _file(tmp_path, text)
    with pytest.raises(PasswordFileError) as caught:
        PasswordFile.load(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert caught.value.line == line


def test_unreadable_file_is_a_password_file_error(tmp_path: Path) -> None:
    """Brief: load errors name the file (a missing file included)."""
    with pytest.raises(PasswordFileError) as caught:
        PasswordFile.load(str(tmp_path / "absent"))
    assert str(tmp_path / "absent") in str(caught.value)


def test_check(tmp_path: Path) -> None:
    """Brief: check is True only for the right password of a known user; an unknown user, a
    missing password and a wrong one are False. $2a$/$2y$ hashes (other bcrypt tools) load too."""
    other = HASH.replace("$2b$", "$2y$", 1)
    passwords = PasswordFile.load(_file(tmp_path, f"# users\nalice:{HASH}\n\ncarol:{other}\n"))
    assert passwords.users() == ["alice", "carol"]
    assert passwords.check("alice", b"right")
    assert passwords.check("carol", b"right")
    assert not passwords.check("alice", b"wrong")
    assert not passwords.check("alice", None)
    assert not passwords.check("bob", b"right")
    assert not passwords.check("alice", b"right" + b"x" * 80)


def test_cached_check_follows_password_changes(tmp_path: Path) -> None:
    """Brief: successful checks are cached; the cache is keyed by the hash, so after a password
    change the old password no longer passes and the new one does."""
    passwords = PasswordFile.load(_file(tmp_path, f"alice:{HASH}\n"))
    assert passwords.check("alice", b"right") and passwords.check("alice", b"right")  # second: cached
    passwords.set("alice", "new", cost=4)
    assert not passwords.check("alice", b"right")
    assert passwords.check("alice", b"new")
    passwords.delete("alice")
    assert not passwords.check("alice", b"new")


def test_set_delete_save_round_trip(tmp_path: Path) -> None:
    """Brief: set, delete, save (atomic, mode 0600), users; what is saved loads back."""
    passwords = PasswordFile()
    passwords.set("alice", "one", cost=4)
    passwords.set("bob", b"two", cost=4)
    passwords.set("carol", "three", cost=4)
    passwords.delete("bob")
    with pytest.raises(KeyError):
        passwords.delete("bob")
    path = tmp_path / "passwords"
    passwords.save(str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["passwords"]
    loaded = PasswordFile.load(str(path))
    assert loaded.users() == ["alice", "carol"]
    assert loaded.check("alice", b"one") and loaded.check("carol", b"three")


@pytest.mark.parametrize("user", ["", "a:b", "#hash", " padded", "line\nbreak"])
def test_set_refuses_user_names_the_format_cannot_hold(user: str) -> None:
    """Format `user:hash` per line: no ':' or newline in a name, and '#' starts a comment."""
    with pytest.raises(ValueError):
        PasswordFile().set(user, "pw", cost=4)


@pytest.mark.parametrize("password", ["", "x" * 73])
def test_set_refuses_empty_and_over_long_passwords(password: str) -> None:
    """bcrypt reads only 72 bytes; a longer password would be silently cut, so it is refused."""
    with pytest.raises(ValueError):
        PasswordFile().set("alice", password, cost=4)


def test_successful_checks_are_remembered_for_a_short_time_only(tmp_path: Path) -> None:
    """Issue 2 P1 (bcrypt must not run for every connect): a successful check is remembered
    for CACHE_SECONDS, keyed by the user's hash and the password, and ``cached`` answers from
    that memory alone; afterwards bcrypt runs again. A wrong password is never cached."""
    from relaymq.auth.passwords import CACHE_SECONDS

    now = [1000.0]
    passwords = PasswordFile(clock=lambda: now[0])
    passwords.set("alice", "right", cost=4)
    assert not passwords.cached("alice", b"right")  # nothing checked yet
    assert passwords.check("alice", b"right")
    assert passwords.cached("alice", b"right")
    assert not passwords.cached("alice", b"wrong") and not passwords.check("alice", b"wrong")
    assert not passwords.cached("bob", b"right") and not passwords.cached("alice", None)
    now[0] += CACHE_SECONDS
    assert not passwords.cached("alice", b"right")  # expired: ask bcrypt again
    assert passwords.check("alice", b"right") and passwords.cached("alice", b"right")
