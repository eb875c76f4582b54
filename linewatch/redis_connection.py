"""One way to reach Redis: URL, ACL user, password, TLS and timeouts from the ``redis`` settings.

Every linewatch process builds its clients with :func:`redis_client` (or :func:`connect_redis`,
which also checks the connection and explains a refusal). Credentials never travel in clear:

* the password is a :class:`pydantic.SecretStr`; a password written into the URL
  (``redis://user:secret@host``) is moved out of it when the settings are read, so the stored
  URL, ``repr`` and every ``model_dump`` carry no secret (the field is excluded from dumps);
* :attr:`RedisConnectionSettings.display_url` is what may be printed
  (``redis://user:***@host:6379/0``);
* a process started by linewatch (the Flink job) gets the password through its environment,
  :data:`PASSWORD_ENV`, never through a file it is given (``spec.json``).

>>> conn = RedisConnectionSettings(url="rediss://ingest:s3cret@redis.plant:6380/0")
>>> conn.url, conn.display_url
('rediss://ingest@redis.plant:6380/0', 'rediss://ingest:***@redis.plant:6380/0')
>>> "s3cret" in repr(conn) or "s3cret" in conn.model_dump_json()
False
>>> conn.password.get_secret_value()
's3cret'

See docs/redis-security.md for the URL forms, TLS settings and the ACL users of each stage.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

import redis
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

PASSWORD_ENV = "LINEWATCH_REDIS__PASSWORD"
"""Environment variable holding the Redis password (read by ``Settings`` and by the job process)."""

SCHEMES = ("redis", "rediss", "unix")


class RedisConnectError(RuntimeError):
    """Redis could not be reached or refused us; the message says which setting to fix."""


def _split(url: str) -> SplitResult:
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ValueError(
            f"redis.url must start with redis:// (plain TCP), rediss:// (TLS) or unix://, got {parts.scheme or 'no'} scheme"
        )
    return parts


def _netloc(parts: SplitResult, username: str | None, password: str | None) -> str:
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if username is None and password is None:
        return host
    user = username or ""
    return f"{user}:{password}@{host}" if password is not None else f"{user}@{host}"


def split_password(url: str) -> tuple[str, str | None]:
    """``url`` without its password, and the password (URL-decoded) or None.

    >>> split_password("redis://lw-ingest:p%40ss@10.0.0.5:6379/0")
    ('redis://lw-ingest@10.0.0.5:6379/0', 'p@ss')
    >>> split_password("redis://127.0.0.1:6379/0")
    ('redis://127.0.0.1:6379/0', None)
    """
    parts = _split(url)
    if parts.password is None:
        return url, None
    clean = urlunsplit(parts._replace(netloc=_netloc(parts, parts.username or None, None)))
    return clean, unquote(parts.password)


def mask_url(url: str | None) -> str | None:
    """``url`` with any password replaced by ``***`` (safe to print or log).

    >>> mask_url("redis://:hunter2@host:6379/0")
    'redis://:***@host:6379/0'
    >>> mask_url("redis://u:hunter2@host:port/0")
    '<unparseable URL>'
    """
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        return urlunsplit(parts._replace(netloc=_netloc(parts, parts.username or "", "***")))
    except ValueError:  # e.g. a port that is not a number
        return "<unparseable URL>" if "@" in url else url


class RedisConnectionSettings(BaseModel):
    """How to reach Redis: the part of the ``redis`` settings every process (and the Flink job) needs."""

    model_config = ConfigDict(hide_input_in_errors=True)  # a rejected URL may hold a password

    url: str | None = Field(
        default=None,
        description="Any Redis >= 7 / Valkey server: redis://[user@]host:6379/0, rediss://... for TLS, "
        "unix:///path.sock. A password in the URL is moved to redis.password. "
        "Unset: an embedded server is started under the data directory.",
    )
    username: str | None = Field(
        default=None, description="Redis ACL user (or in the URL: redis://user@host). Unset: the default user."
    )
    password: SecretStr | None = Field(
        default=None,
        exclude=True,  # never in a dump: config show, spec.json, logs
        description=f"Password of the ACL user. Prefer the environment ({PASSWORD_ENV}) or a config file "
        "readable only by the service account.",
    )
    tls_ca: Path | None = Field(
        default=None, description="PEM file of the CA that signed the server's certificate (rediss://)."
    )
    tls_cert: Path | None = Field(
        default=None, description="Client certificate (PEM), when the server requires one (tls-auth-clients yes)."
    )
    tls_key: Path | None = Field(default=None, description="Private key (PEM) of tls_cert.")
    tls_verify: Literal["required", "optional", "none"] = Field(
        default="required",
        description="Verification of the server's certificate; 'none' only for a throwaway test server.",
    )
    tls_check_hostname: bool = Field(
        default=True, description="The server certificate must name the host of the URL (DNS or IP SAN)."
    )
    connect_timeout_s: float = Field(default=5.0, gt=0, description="Seconds to wait for a connection.")
    socket_timeout_s: float | None = Field(
        default=None, gt=0, description="Seconds to wait for a reply (unset: as long as a blocking read asks)."
    )

    @field_validator("tls_ca", "tls_cert", "tls_key", mode="after")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        """Relative to where the settings are read, so a child process with another cwd finds them."""
        return path.expanduser().absolute() if path is not None else None

    @model_validator(mode="after")
    def _move_password_out_of_url(self) -> RedisConnectionSettings:
        if self.url is None:
            given = [n for n in ("username", "password", "tls_ca", "tls_cert", "tls_key") if getattr(self, n)]
            if given:
                raise ValueError(
                    f"redis.{', redis.'.join(given)} set but redis.url is not: the embedded server has no "
                    "users or TLS; set redis.url (LINEWATCH_REDIS__URL) to the server they belong to"
                )
            return self
        clean, secret = split_password(self.url)
        if secret is not None:
            if self.password is not None and self.password.get_secret_value() != secret:
                raise ValueError(
                    "the password in redis.url differs from redis.password: keep only one "
                    f"(preferably {PASSWORD_ENV}) and remove the other"
                )
            self.password = SecretStr(secret)
            self.url = clean
        parts = _split(self.url)
        url_user = unquote(parts.username) if parts.username else None
        if self.username is not None and url_user is not None and self.username != url_user:
            raise ValueError(f"redis.username={self.username!r} differs from the user in redis.url ({url_user!r})")
        tls_files = [n for n in ("tls_ca", "tls_cert", "tls_key") if getattr(self, n) is not None]
        if tls_files and parts.scheme != "rediss":
            raise ValueError(
                f"redis.{', redis.'.join(tls_files)} set but redis.url is {parts.scheme}://: use rediss:// for TLS"
            )
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("set both redis.tls_cert and redis.tls_key (the client certificate and its key), or neither")
        return self

    @property
    def user(self) -> str | None:
        """The ACL user in force (settings, else the URL's), or None for ``default``."""
        if self.username:
            return self.username
        if self.url:
            parts = urlsplit(self.url)
            return unquote(parts.username) if parts.username else None
        return None

    @property
    def display_url(self) -> str | None:
        """The URL with the user in force and ``***`` for a password: what may be printed."""
        if self.url is None:
            return None
        parts = urlsplit(self.url)
        if self.password is None and not self.username:
            return self.url
        return urlunsplit(parts._replace(netloc=_netloc(parts, self.user or "", "***" if self.password else None)))

    def connection_settings(self) -> RedisConnectionSettings:
        """Just the connection part (drops fields of subclasses such as the embedded server's)."""
        return RedisConnectionSettings.model_construct(
            **{name: getattr(self, name) for name in RedisConnectionSettings.model_fields}
        )

    def for_url(self, url: str | None) -> RedisConnectionSettings:
        """These settings aimed at ``url`` (the embedded server's, a CLI option's); its password, if any,
        becomes :attr:`password`. ``None`` keeps :attr:`url`."""
        if url is None or url == self.url:
            return self.connection_settings()
        clean, secret = split_password(url)
        password = SecretStr(secret) if secret is not None else self.password
        data = {name: getattr(self, name) for name in RedisConnectionSettings.model_fields}
        return RedisConnectionSettings(**{**data, "url": clean, "password": password})

    def secret_env(self) -> dict[str, str]:
        """Environment for a child process that must authenticate (``{PASSWORD_ENV: password}`` or ``{}``)."""
        return {PASSWORD_ENV: self.password.get_secret_value()} if self.password is not None else {}


def client_kwargs(conn: RedisConnectionSettings, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments of ``redis.Redis.from_url`` for ``conn`` (password from ``environ`` as a fallback)."""
    if conn.url is None:
        raise RedisConnectError("no Redis URL: set redis.url (LINEWATCH_REDIS__URL) or start the embedded server")
    env = os.environ if environ is None else environ
    password = conn.password.get_secret_value() if conn.password is not None else env.get(PASSWORD_ENV) or None
    kwargs: dict[str, Any] = {
        "username": conn.user,
        "password": password,
        "socket_connect_timeout": conn.connect_timeout_s,
        "socket_timeout": conn.socket_timeout_s,
        # no CLIENT SETINFO on connect: the stages' ACL users (linewatch.redis_acl) are not granted it
        "lib_name": None,
        "lib_version": None,
    }
    if urlsplit(conn.url).scheme == "rediss":
        for name in ("tls_ca", "tls_cert", "tls_key"):
            path = getattr(conn, name)
            if path is not None and not Path(path).is_file():
                raise RedisConnectError(f"redis.{name}={path} does not exist or is not a file: fix the path")
        kwargs.update(
            ssl_ca_certs=str(conn.tls_ca) if conn.tls_ca else None,
            ssl_certfile=str(conn.tls_cert) if conn.tls_cert else None,
            ssl_keyfile=str(conn.tls_key) if conn.tls_key else None,
            ssl_cert_reqs=conn.tls_verify,
            ssl_check_hostname=conn.tls_check_hostname and conn.tls_verify != "none",
        )
    return kwargs


def redis_client(
    conn: RedisConnectionSettings, url: str | None = None, *, environ: Mapping[str, str] | None = None, **overrides: Any
) -> redis.Redis:
    """A ``redis.Redis`` for ``conn`` (aimed at ``url`` if given); no round trip yet.

    ``overrides`` are passed to redis-py as they are (``decode_responses``, ``socket_timeout``, ...).
    The password is ``conn.password``, else one in ``url``, else ``$LINEWATCH_REDIS__PASSWORD``
    (how the Flink job process receives it).
    """
    target = conn.for_url(url)
    kwargs = {**client_kwargs(target, environ), **overrides}  # raises without a URL
    assert target.url is not None
    parts = urlsplit(target.url)
    # user and password go as arguments: redis-py lets the URL's win over them
    bare = urlunsplit(parts._replace(netloc=_netloc(parts, None, None))) if parts.scheme != "unix" else target.url
    return redis.Redis.from_url(bare, **kwargs)


def redis_cluster_client(
    conn: RedisConnectionSettings, url: str | None = None, *, environ: Mapping[str, str] | None = None, **overrides: Any
) -> redis.RedisCluster:
    """A ``redis.RedisCluster`` for ``conn`` (``url``: any node of the cluster), same user, password and TLS.

    redis-py's cluster client does not pass ``ssl_check_hostname`` on (nodes are reached at the
    addresses ``CLUSTER SLOTS`` announces, usually IPs): the CA and client certificate still apply.
    The ACL user also needs ``+cluster|slots +command`` (``linewatch.redis_acl.acl_rules(cluster=True)``).
    """
    target = conn.for_url(url)
    kwargs = {**client_kwargs(target, environ), **overrides}
    kwargs.pop("ssl_check_hostname", None)
    assert target.url is not None
    parts = urlsplit(target.url)
    bare = urlunsplit(parts._replace(netloc=_netloc(parts, None, None)))
    cluster: redis.RedisCluster = redis.RedisCluster.from_url(bare, **kwargs)
    return cluster


def explain(exc: Exception, conn: RedisConnectionSettings) -> str:
    """What went wrong talking to ``conn``'s server, and which setting to fix."""
    where = conn.display_url
    user = conn.user or "default"
    text = str(exc)
    if isinstance(exc, redis.AuthenticationError) or "WRONGPASS" in text or "NOAUTH" in text:
        if "required" in text.lower() or "NOAUTH" in text:
            return (f"Redis at {where} requires a password: set redis.password ({PASSWORD_ENV}) and, for an "
                    "ACL user, redis.username")
        return (f"Redis at {where} refused user {user!r}: wrong password, or the ACL user does not exist or is "
                f"disabled ({text}). Fix redis.password ({PASSWORD_ENV}) / redis.username, or the server's ACL")
    if isinstance(exc, redis.exceptions.NoPermissionError):
        return (f"Redis at {where}: ACL user {user!r} may not do this ({text}). Grant the command and key pattern "
                "(docs/redis-security.md lists each stage's ACL) or use the stage's user")
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, ssl.SSLError) or "SSL" in text or "certificate" in text.lower():
        return f"TLS with Redis at {where} failed ({text}): {_tls_hint(text, conn)}"
    if isinstance(exc, redis.ConnectionError):
        scheme = urlsplit(conn.url or "").scheme
        if scheme == "redis" and ("closed" in text.lower() or "reset" in text.lower()):
            return (f"Redis at {where} closed the connection ({text}): if the server only accepts TLS "
                    "(tls-port with port 0) use a rediss:// URL and set redis.tls_ca")
        return f"Redis at {where} does not answer ({text}): start it or fix redis.url (LINEWATCH_REDIS__URL)"
    return f"Redis at {where}: {text}"


def _tls_hint(text: str, conn: RedisConnectionSettings) -> str:
    upper = text.upper()
    dropped = "EOF" in upper or "RESET" in upper  # TLS 1.3: the server's alert may arrive as a closed socket
    if "CERTIFICATE_REQUIRED" in upper or "HANDSHAKE_FAILURE" in upper:
        return "the server requires a client certificate (tls-auth-clients yes): set redis.tls_cert and redis.tls_key"
    if dropped and conn.tls_cert is None:
        return ("the server closed the connection, as it does when it requires a client certificate "
                "(tls-auth-clients yes): set redis.tls_cert and redis.tls_key")
    if "UNKNOWN_CA" in upper or "BAD_CERTIFICATE" in upper:
        return "the server does not trust redis.tls_cert: use a client certificate signed by its tls-ca-cert-file CA"
    if "HOSTNAME" in upper or "IP ADDRESS MISMATCH" in upper:
        return ("the server's certificate does not name the URL's host: use a host it names (DNS/IP SAN) "
                "or set redis.tls_check_hostname=false")
    if "VERIFY_FAILED" in upper:
        return "the server's certificate is not trusted: set redis.tls_ca to the CA that signed it"
    return ("check redis.tls_ca (the CA that signed the server's certificate) and, if the server demands client "
            "certificates, redis.tls_cert and redis.tls_key")


def connect_redis(
    conn: RedisConnectionSettings, url: str | None = None, *, environ: Mapping[str, str] | None = None, **overrides: Any
) -> redis.Redis:
    """:func:`redis_client`, then a ``PING``; a failure raises :class:`RedisConnectError` saying what to fix."""
    target = conn.for_url(url)
    client = redis_client(target, environ=environ, **overrides)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        raise RedisConnectError(explain(exc, target)) from exc
    return client
