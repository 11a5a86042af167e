"""The load check of a persona's own regular expressions (profile slots of type pattern):
memory/recall/slots/pattern.py runs them on the ``regex`` module with a timeout; this
refuses, when the persona loads, one that would hit that timeout on ordinary words."""

from __future__ import annotations


PATTERN_PROBE_CHARS = 200
PATTERN_PROBE_S = 0.2  # a sane pattern scans the probe in microseconds, a runaway one never ends


def pattern_problem(pattern: str) -> str | None:
    """Why a profile slot's ``pattern`` cannot be run on visitors' words, or None: it is not
    a regular expression, or it backtracks without end on a run of one of its own letters
    (or of spaces) and a stop. Compiled as memory/recall/slots/pattern.py runs it."""
    import regex

    try:
        compiled = regex.compile(pattern, regex.IGNORECASE | regex.V0)
    except regex.error as exc:
        return f"pattern {pattern!r} is not a regular expression: {exc}"
    for letter in sorted({char for char in pattern.lower() if char.isalnum()} | {"a", "1", " "}):
        try:
            compiled.search(letter * PATTERN_PROBE_CHARS + "!", timeout=PATTERN_PROBE_S)
        except TimeoutError:
            return (f"pattern {pattern!r} backtracks without end: it found nothing in {PATTERN_PROBE_S:g} s on "
                    f"{PATTERN_PROBE_CHARS} {letter!r}s (a repetition inside a repetition, like (a+)+, or "
                    "alternatives that overlap, like (a|aa)+); write it without one")
    return None
