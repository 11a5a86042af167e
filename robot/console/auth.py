"""Who may use the console: the bind rule checked before the robot starts, and the token
checked on every request (page, assets, live stream, controls, /metrics).

A browser cannot put a header on an EventSource, so the page is opened once as
``/?token=...``: the token is then kept in an HttpOnly, SameSite=Strict cookie (and taken
out of the address bar). Scripts and Prometheus send ``Authorization: Bearer <token>``.
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlencode

from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from config.checks import is_loopback
from config.loader import ConfigError

COOKIE = "robot_console"


def check_bind(host: str, token: str | None) -> None:
    """Refuse (ConfigError, exit 2) to serve beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ConfigError("console", [
            f"host {host} is reachable from other machines: set ROBOT_CONSOLE_TOKEN "
            "(or bind to 127.0.0.1)"])


class TokenGate:
    """ASGI middleware: 401 unless the request carries the token (when one is set).

    Without a token the console is bound to loopback; then the Host header must name
    loopback too, so a web page cannot reach it through DNS rebinding."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if self.token is None:
            host = headers.get("host", "").rsplit(":", 1)[0]
            if not is_loopback(host):
                await PlainTextResponse("console is for this machine only", 403)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        from_query = query.get("token", [None])[0]
        if from_query is not None and self._matches(from_query) and scope["method"] == "GET":
            await self._remember(scope, query, from_query)(scope, receive, send)
            return
        if self._matches(_bearer(headers) or _cookie(headers)):
            await self.app(scope, receive, send)
            return
        await PlainTextResponse("missing or wrong console token", 401,
                                headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)

    def _matches(self, candidate: str | None) -> bool:
        assert self.token is not None
        return candidate is not None and hmac.compare_digest(candidate.encode(), self.token)

    @staticmethod
    def _remember(scope: Scope, query: dict[str, list[str]], token: str) -> RedirectResponse:
        """Set the cookie and send the browser to the same URL without the token in it."""
        rest = urlencode({k: v for k, v in query.items() if k != "token"}, doseq=True)
        response = RedirectResponse(scope["path"] + (f"?{rest}" if rest else ""), 303)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        return response


def _bearer(headers: dict[str, str]) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def _cookie(headers: dict[str, str]) -> str | None:
    jar = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed cookie header is simply no token
        return None
    return jar[COOKIE].value if COOKIE in jar else None
