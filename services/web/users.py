"""Users, sessions, API tokens and login throttling of the web app, in one SQLite file.

- Passwords: argon2id (``argon2-cffi``'s ``PasswordHasher``, RFC 9106 defaults), never stored in clear.
- Sessions: a random 256-bit id in an HttpOnly cookie; the database keeps only its SHA-256, with the
  session's CSRF token and expiry. Logging out or removing the user deletes it.
- API tokens (machines): ``lwt_<id>_<secret>``, shown once; the database keeps the SHA-256 of the
  secret (a 256-bit random secret needs no slow hash) and the role of its user.
- Failed logins are counted per user + client address; more than ``max_failures`` in ``window_s``
  locks that pair out until the window passes (stored here too, so a restart does not reset it).

>>> import tempfile, pathlib
>>> db = UserDB(pathlib.Path(tempfile.mkdtemp()) / "users.db")
>>> db.add_user("maria", "correct horse", "operator").role
'operator'
>>> db.authenticate("maria", "wrong") is None, db.authenticate("maria", "correct horse").name
(True, 'maria')
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

Role = Literal["operator", "engineer", "admin"]
ROLES: tuple[Role, ...] = ("operator", "engineer", "admin")
MIN_PASSWORD = 8
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@")

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, role TEXT NOT NULL, pw_hash TEXT NOT NULL,
                                  created_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (id_hash TEXT PRIMARY KEY, user TEXT NOT NULL, csrf TEXT NOT NULL,
                                     created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (id TEXT PRIMARY KEY, user TEXT NOT NULL, label TEXT NOT NULL,
                                   secret_hash TEXT NOT NULL, created_ms INTEGER NOT NULL,
                                   last_used_ms INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS login_failures (key TEXT NOT NULL, t_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS login_failures_key ON login_failures (key, t_ms);
"""


class UserError(ValueError):
    """A user operation that cannot be done (the message says why and what to do)."""


@dataclass(frozen=True)
class User:
    name: str
    role: Role
    created_ms: int = 0

    def can(self, role: Role) -> bool:
        """Roles are ordered: admin can do what an engineer can, an engineer what an operator can."""
        return ROLES.index(self.role) >= ROLES.index(role)


@dataclass(frozen=True)
class Session:
    user: User
    csrf: str
    expires_ms: int


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _now_ms() -> int:
    return int(time.time() * 1000)


def check_name(name: str) -> str:
    if not name or len(name) > 64 or not set(name) <= _NAME_CHARS:
        raise UserError(f"user name {name!r}: use 1-64 letters, digits, '.', '_', '-' or '@'")
    return name


def check_role(role: str) -> Role:
    if role not in ROLES:
        raise UserError(f"role {role!r}: use one of {', '.join(ROLES)}")
    return role


class UserDB:
    """The web app's users database (see the module docstring). Thread-safe: one connection per call."""

    def __init__(self, path: Path, hasher: PasswordHasher | None = None) -> None:
        self.path = path
        self.hasher = hasher or PasswordHasher()
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.executescript(SCHEMA)
        path.chmod(0o600)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=10)
        try:
            with conn:
                yield conn
        finally:
            conn.close()

    # -- users ----------------------------------------------------------------------------------------
    def add_user(self, name: str, password: str, role: str) -> User:
        check_name(name)
        role_ = check_role(role)
        if len(password) < MIN_PASSWORD:
            raise UserError(f"password too short: use at least {MIN_PASSWORD} characters")
        user = User(name, role_, _now_ms())
        try:
            with self._db() as db:
                db.execute("INSERT INTO users VALUES (?, ?, ?, ?)",
                           (name, role_, self.hasher.hash(password), user.created_ms))
        except sqlite3.IntegrityError as exc:
            raise UserError(f"user {name!r} exists: remove it first (linewatch users remove {name})") from exc
        return user

    def set_password(self, name: str, password: str) -> None:
        if len(password) < MIN_PASSWORD:
            raise UserError(f"password too short: use at least {MIN_PASSWORD} characters")
        with self._db() as db:
            if db.execute("UPDATE users SET pw_hash = ? WHERE name = ?",
                          (self.hasher.hash(password), name)).rowcount == 0:
                raise UserError(f"no user {name!r}")
            db.execute("DELETE FROM sessions WHERE user = ?", (name,))

    def get_user(self, name: str) -> User | None:
        with self._db() as db:
            row = db.execute("SELECT name, role, created_ms FROM users WHERE name = ?", (name,)).fetchone()
        return User(row[0], row[1], row[2]) if row else None

    def users(self) -> list[User]:
        with self._db() as db:
            rows = db.execute("SELECT name, role, created_ms FROM users ORDER BY name").fetchall()
        return [User(r[0], r[1], r[2]) for r in rows]

    def remove_user(self, name: str) -> None:
        with self._db() as db:
            if db.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount == 0:
                raise UserError(f"no user {name!r}: see `linewatch users list`")
            db.execute("DELETE FROM sessions WHERE user = ?", (name,))
            db.execute("DELETE FROM tokens WHERE user = ?", (name,))

    def authenticate(self, name: str, password: str) -> User | None:
        """The user when the password matches (argon2 verify; rehashes on parameter upgrades)."""
        with self._db() as db:
            row = db.execute("SELECT pw_hash FROM users WHERE name = ?", (name,)).fetchone()
        if row is None:
            self.hasher.hash(password)  # same work for unknown users: no timing oracle on names
            return None
        try:
            self.hasher.verify(row[0], password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return None
        if self.hasher.check_needs_rehash(row[0]):
            with self._db() as db:
                db.execute("UPDATE users SET pw_hash = ? WHERE name = ?", (self.hasher.hash(password), name))
        return self.get_user(name)

    # -- sessions -------------------------------------------------------------------------------------
    def create_session(self, user: User, ttl_s: int) -> tuple[str, Session]:
        """A new session: (cookie value, session). Only the SHA-256 of the cookie value is stored."""
        sid = secrets.token_urlsafe(32)
        now = _now_ms()
        session = Session(user, secrets.token_urlsafe(32), now + ttl_s * 1000)
        with self._db() as db:
            db.execute("DELETE FROM sessions WHERE expires_ms < ?", (now,))
            db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)",
                       (_sha256(sid), user.name, session.csrf, now, session.expires_ms))
        return sid, session

    def session(self, sid: str) -> Session | None:
        with self._db() as db:
            row = db.execute("SELECT s.csrf, s.expires_ms, u.name, u.role, u.created_ms FROM sessions s "
                             "JOIN users u ON u.name = s.user WHERE s.id_hash = ?", (_sha256(sid),)).fetchone()
        if row is None or row[1] < _now_ms():
            return None
        return Session(User(row[2], row[3], row[4]), row[0], row[1])

    def end_session(self, sid: str) -> None:
        with self._db() as db:
            db.execute("DELETE FROM sessions WHERE id_hash = ?", (_sha256(sid),))

    # -- API tokens -----------------------------------------------------------------------------------
    def create_token(self, name: str, label: str = "") -> str:
        """A new API token for user ``name`` (it acts with that user's role). Returned once, stored hashed."""
        if self.get_user(name) is None:
            raise UserError(f"no user {name!r}: add it first (linewatch users add {name} --role operator)")
        tid, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        with self._db() as db:
            db.execute("INSERT INTO tokens (id, user, label, secret_hash, created_ms) VALUES (?, ?, ?, ?, ?)",
                       (tid, name, label, _sha256(secret), _now_ms()))
        return f"lwt_{tid}_{secret}"

    def token_user(self, token: str) -> User | None:
        parts = token.split("_", 2)
        if len(parts) != 3 or parts[0] != "lwt":
            return None
        with self._db() as db:
            row = db.execute("SELECT t.secret_hash, u.name, u.role, u.created_ms FROM tokens t JOIN users u "
                             "ON u.name = t.user WHERE t.id = ?", (parts[1],)).fetchone()
            if row is None or not hmac.compare_digest(row[0], _sha256(parts[2])):
                return None
            db.execute("UPDATE tokens SET last_used_ms = ? WHERE id = ?", (_now_ms(), parts[1]))
        return User(row[1], row[2], row[3])

    def tokens(self, name: str | None = None) -> list[dict[str, object]]:
        with self._db() as db:
            rows = db.execute("SELECT id, user, label, created_ms, last_used_ms FROM tokens"
                              + (" WHERE user = ?" if name else "") + " ORDER BY created_ms",
                              (name,) if name else ()).fetchall()
        return [dict(zip(("id", "user", "label", "created_ms", "last_used_ms"), r, strict=True)) for r in rows]

    def revoke_token(self, token_id: str) -> None:
        with self._db() as db:
            if db.execute("DELETE FROM tokens WHERE id = ?", (token_id,)).rowcount == 0:
                raise UserError(f"no token {token_id!r}: see `linewatch users list --tokens`")

    # -- login throttling -----------------------------------------------------------------------------
    def login_blocked_for_s(self, name: str, client: str, max_failures: int, window_s: int) -> int:
        """Seconds until ``name`` may try again from ``client`` (0: allowed now)."""
        now = _now_ms()
        key = f"{name}\x00{client}"
        with self._db() as db:
            db.execute("DELETE FROM login_failures WHERE t_ms < ?", (now - window_s * 1000,))
            rows = db.execute("SELECT t_ms FROM login_failures WHERE key = ? ORDER BY t_ms",
                              (key,)).fetchall()
        if len(rows) < max_failures:
            return 0
        oldest_counted = rows[-max_failures][0]
        return max(1, int((oldest_counted + window_s * 1000 - now) / 1000) + 1)

    def record_login_failure(self, name: str, client: str) -> None:
        with self._db() as db:
            db.execute("INSERT INTO login_failures VALUES (?, ?)", (f"{name}\x00{client}", _now_ms()))

    def clear_login_failures(self, name: str, client: str) -> None:
        with self._db() as db:
            db.execute("DELETE FROM login_failures WHERE key = ?", (f"{name}\x00{client}",))
