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

A registered secret is also masked when altered the way an LLM alters it (issue 50, item
6): its dashes dropped or turned into spaces, its case changed, or only part of it
repeated. Any run of the text whose letters and digits, separators aside, hold
``_FRAGMENT`` characters in a row of a secret's own is masked with the separators between.
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

# A run of this many of a secret's letters and digits in order is that secret (about 60
# bits of a random key); a secret shorter than this must appear whole.
_FRAGMENT = 12

_secrets: set[str] = set()
_fragments: set[str] = set()  # every _FRAGMENT-long window of every secret, letters and digits only, lower case


def register(values: Iterable[str | None]) -> None:
    """Remember secret values to mask from now on (None and empty values are skipped)."""
    for value in values:
        if value and len(value) >= _MIN_SECRET_LEN:
            _secrets.add(value)
            core = _alnum(value)
            _fragments.update(core[i:i + _FRAGMENT] for i in range(len(core) - _FRAGMENT + 1))


def _alnum(text: str) -> str:
    return "".join(char for char in text.lower() if char.isalnum())


def redact(text: str, shapes: bool = True) -> str:
    # longest first, so that a secret containing another is masked whole
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    if _fragments:
        text = _mask_altered(text)
    return _PATTERNS.sub(MASK, text) if shapes else text


def _mask_altered(text: str) -> str:
    """Mask every stretch of ``text`` whose letters and digits continue a secret's fragment."""
    places = [index for index, char in enumerate(text) if char.isalnum()]
    letters = "".join(text[index].lower() for index in places)
    hidden = [False] * len(letters)
    for start in range(len(letters) - _FRAGMENT + 1):
        if letters[start:start + _FRAGMENT] in _fragments:
            hidden[start:start + _FRAGMENT] = [True] * _FRAGMENT
    if not any(hidden):
        return text
    pieces, cursor, position = [], 0, 0
    while position < len(letters):
        if not hidden[position]:
            position += 1
            continue
        end = position
        while end + 1 < len(letters) and hidden[end + 1]:
            end += 1
        pieces += [text[cursor:places[position]], MASK]
        cursor, position = places[end] + 1, end + 1
    return "".join(pieces) + text[cursor:]


def has_secrets() -> bool:
    """Whether any secret is registered (outward texts need no scan otherwise)."""
    return bool(_secrets)


def hide_url_password(text: str) -> str:
    """``postgresql://kiosk:secret@db/memory?sslpassword=x`` ->
    ``postgresql://kiosk:***@db/memory?sslpassword=***``: the password of the user part, and
    every query value whose name says it is secret (password, token, key, secret); any other
    text as it is."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text
    rest, question, query = rest.partition("?")
    userinfo, at, host = rest.partition("@")
    if at and ":" in userinfo and "/" not in userinfo:
        rest = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
    if question:
        query = _SECRET_QUERY.sub(lambda match: match.group(1) + MASK, query)
    return f"{scheme}://{rest}{question}{query}"


_SECRET_QUERY = re.compile(r"((?:^|[&;])[^=&;]*(?i:pass|secret|token|key)[^=&;]*=)[^&;#]*")


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
