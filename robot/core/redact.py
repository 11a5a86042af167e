"""Secrets never reach a log line or an error event: the API key and the MQTT password are
masked wherever they appear, even inside text a server sent back (some servers echo the
key they were given in an error body, which the openai client puts in its exception).

``install(secrets)`` at start: from then on every log record is redacted as it is made
(its traceback included); ``redact(text)`` masks the registered values, and anything that
looks like an OpenAI key or a bearer token, in any other text (error events).
``redact(text, shapes=False)`` masks only the registered values: what the robot says and
publishes (an LLM server may repeat the key inside its reply; issue 28), where a shape
alone ("the bearer regardless ...") must not cut words out of a sentence.
``hide_url_password(text)`` hides the password of a URL (``robot config show``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

MASK = "***"
# Shapes of secrets we never want in a log even when nobody registered them.
_PATTERNS = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,})|(?i:(?<=bearer )[A-Za-z0-9._~+/\-]{8,}=*)")
# Shorter values would mask ordinary words ("dev", "test"); such a secret is no secret.
_MIN_SECRET_LEN = 4

_secrets: set[str] = set()


def register(values: Iterable[str | None]) -> None:
    """Remember secret values to mask from now on (None and empty values are skipped)."""
    _secrets.update(v for v in values if v and len(v) >= _MIN_SECRET_LEN)


def redact(text: str, shapes: bool = True) -> str:
    # longest first, so that a secret containing another is masked whole
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return _PATTERNS.sub(MASK, text) if shapes else text


def has_secrets() -> bool:
    """Whether any secret is registered (outward texts need no scan otherwise)."""
    return bool(_secrets)


def hide_url_password(text: str) -> str:
    """``postgresql://kiosk:secret@db/memory`` -> ``postgresql://kiosk:***@db/memory``;
    any other text as it is."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text
    userinfo, at, host = rest.partition("@")
    if not at or ":" not in userinfo or "/" in userinfo:
        return text
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:{MASK}@{host}"


def _scrub(record: logging.LogRecord) -> None:
    """Mask secrets in a record's message and traceback."""
    message = record.getMessage()
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact(record.exc_text)


_installed = False


def install(*secrets: str | None) -> None:
    """Register ``secrets`` and redact every log record as it is made: the record factory
    sees the records of every logger and reaches every handler, also ones added later."""
    global _installed
    register(secrets)
    if _installed:
        return
    _installed = True
    make_record = logging.getLogRecordFactory()

    def redacted_record(*args: object, **kwargs: object) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        _scrub(record)
        return record

    logging.setLogRecordFactory(redacted_record)
