"""Who is asking: session cookie (browsers) or ``Authorization: Bearer lwt_...`` (machines), roles, CSRF.

Pages answer a missing login with a redirect to ``/login``; the JSON API with 401. A user without the
role gets 403 either way. A state-changing request authenticated by the session cookie must carry the
session's CSRF token (form field ``csrf_token`` or header ``X-CSRF-Token``); a bearer token needs none
(a browser never sends it by itself).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from fastapi import HTTPException, Request

from services.web.users import Role, Session, User, UserDB

SESSION_COOKIE = "lw_session"
LOGIN_CSRF_COOKIE = "lw_login_csrf"


class LoginRequired(Exception):
    """A page was asked for without a login: the app answers with a redirect to /login."""

    def __init__(self, next_url: str) -> None:
        self.next_url = next_url


class Forbidden(Exception):
    """The user lacks the role; pages show a 403 page, the API answers JSON 403."""

    def __init__(self, user: User, role: Role, api: bool) -> None:
        self.user, self.role, self.api = user, role, api


@dataclass(frozen=True)
class Principal:
    user: User
    session: Session | None  # None: an API token

    @property
    def csrf(self) -> str:
        return self.session.csrf if self.session else ""


def identify(request: Request, db: UserDB) -> Principal | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        user = db.token_user(header[7:].strip())
        return Principal(user, None) if user else None
    sid = request.cookies.get(SESSION_COOKIE)
    if sid:
        session = db.session(sid)
        if session is not None:
            return Principal(session.user, session)
    return None


def authorize(request: Request, db: UserDB, role: Role, *, api: bool) -> Principal:
    who = identify(request, db)
    if who is None:
        if api:
            raise HTTPException(401, "log in (session cookie) or send Authorization: Bearer <API token> "
                                "(`linewatch users token NAME`)", headers={"WWW-Authenticate": "Bearer"})
        raise LoginRequired(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    if not who.user.can(role):
        raise Forbidden(who.user, role, api)
    return who


def check_csrf(who: Principal, token: str | None) -> None:
    """Cookie sessions must echo their CSRF token on every state-changing request."""
    if who.session is None:
        return
    if not token or not hmac.compare_digest(token, who.session.csrf):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")
