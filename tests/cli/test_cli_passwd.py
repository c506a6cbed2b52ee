"""``relaymq passwd`` through real subprocesses, checked with ``PasswordFile``.

Requirement (CLI brief): `relaymq passwd [-c] [-b] [-D] FILE USER [PASSWORD]` like
mosquitto_passwd: -c creates/overwrites, -b takes the password from the command line (else a
prompt, or one line of stdin without a tty), -D deletes; lines `user:hash` with bcrypt
(`$2b$`, cost 12 by default); written atomically with mode 0600.
Tests use `--cost 4` (bcrypt's minimum) to stay cheap, except the one that checks the default.
"""

from __future__ import annotations

import stat
from pathlib import Path

from cli_helpers import RunCli
from relaymq.auth.passwords import PasswordFile

CHEAP = ("--cost", "4")


def test_create_add_change_delete(run_cli: RunCli, tmp_path: Path) -> None:
    """Brief: -c creates, a second call adds, the same user again changes the password, -D deletes."""
    path = tmp_path / "passwords"
    assert run_cli("passwd", *CHEAP, "-c", "-b", str(path), "alice", "wonder").returncode == 0
    assert run_cli("passwd", *CHEAP, "-b", str(path), "bob", "builder").returncode == 0
    loaded = PasswordFile.load(str(path))
    assert loaded.users() == ["alice", "bob"]
    assert loaded.check("alice", b"wonder") and loaded.check("bob", b"builder")
    assert not loaded.check("alice", b"builder")

    assert run_cli("passwd", *CHEAP, "-b", str(path), "alice", "changed").returncode == 0
    assert run_cli("passwd", "-D", str(path), "bob").returncode == 0
    loaded = PasswordFile.load(str(path))
    assert loaded.users() == ["alice"]
    assert loaded.check("alice", b"changed") and not loaded.check("alice", b"wonder")


def test_password_from_stdin_without_a_tty(run_cli: RunCli, tmp_path: Path) -> None:
    """Brief: without -b and with no tty, one line is read from stdin as the password."""
    path = tmp_path / "passwords"
    result = run_cli("passwd", *CHEAP, "-c", str(path), "carol", input=b"from stdin\nignored\n")
    assert result.returncode == 0, result.stderr
    assert PasswordFile.load(str(path)).check("carol", b"from stdin")


def test_default_is_bcrypt_cost_12_mode_0600(run_cli: RunCli, tmp_path: Path) -> None:
    """Brief: hash = bcrypt `$2b$`, cost 12 by default; the file has mode 0600."""
    path = tmp_path / "passwords"
    assert run_cli("passwd", "-c", "-b", str(path), "dave", "pw").returncode == 0
    user, hashed = path.read_text().strip().split(":", 1)
    assert user == "dave" and hashed.startswith("$2b$12$")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_create_overwrites_an_existing_file(run_cli: RunCli, tmp_path: Path) -> None:
    """Brief: -c creates *or overwrites* the file."""
    path = tmp_path / "passwords"
    assert run_cli("passwd", *CHEAP, "-c", "-b", str(path), "old", "pw").returncode == 0
    assert run_cli("passwd", *CHEAP, "-c", "-b", str(path), "new", "pw").returncode == 0
    assert PasswordFile.load(str(path)).users() == ["new"]
    assert [p.name for p in tmp_path.iterdir()] == ["passwords"]  # no temporary file left behind


def test_mistakes_are_one_line_errors_and_leave_the_file_alone(run_cli: RunCli, tmp_path: Path) -> None:
    """Brief: like mosquitto_passwd; failures print one line and do not damage the file."""
    path = tmp_path / "passwords"
    missing = run_cli("passwd", *CHEAP, "-b", str(path), "eve", "pw")
    assert missing.returncode == 1
    assert missing.stderr == f"relaymq passwd: {path} does not exist (use -c to create it)\n"
    assert not path.exists()

    assert run_cli("passwd", *CHEAP, "-c", "-b", str(path), "eve", "pw").returncode == 0
    before = path.read_bytes()
    cases = [
        (("-D", str(path), "nobody"), 1),                 # deleting a user that is not there
        (("-c", "-D", str(path), "eve"), 2),              # contradictory flags
        (("-b", str(path), "frank"), 2),                  # -b without PASSWORD
        ((*CHEAP, str(path), "frank", "pw"), 2),          # PASSWORD without -b
        ((*CHEAP, "-b", str(path), "a:b", "pw"), 1),      # ':' cannot be in a user name
        ((*CHEAP, "-b", str(path), "gina", "x" * 73), 1), # longer than bcrypt's 72 bytes
    ]
    for args, status in cases:
        result = run_cli("passwd", *args)
        assert result.returncode == status, (args, result.stderr)
        assert result.stderr.startswith("relaymq passwd: ") and result.stderr.count("\n") == 1, result.stderr
    assert path.read_bytes() == before
