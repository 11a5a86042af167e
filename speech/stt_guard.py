"""What Whisper says on noise is not a customer speaking: the hallucination guard.

Measured on everyday noise (FINDINGS.md): most false turns are Whisper inventing text in
its temperature fallback ("Thank you.", ".", "Hahaha"). Decoding at temperature 0 and
dropping a segment when ``no_speech_prob`` is high OR ``avg_logprob`` is low removed almost
all of them (faster-whisper's own rule is the AND of the two, which removed none). What
is left is caught by the text: no letters, or a phrase Whisper is known to invent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

# Whisper's stock inventions on silence and noise (lower case, no punctuation). Short real
# answers ("yes", "no", "okay") are not here: a visitor says them.
KNOWN_HALLUCINATIONS = frozenset({
    "thank you", "thank you very much", "thanks for watching", "thank you for watching",
    "thanks for listening", "thank you for listening", "please subscribe", "subscribe",
    "you", "bye", "bye bye", "i'll see you next time", "see you next time", "see you",
    "hahaha", "haha", "ha ha", "ha", "oh", "uh", "um", "hmm", "mm", "ah", "music",
    "applause", "laughter", "silence", "the end", "so", "i'm sorry",
    "cheering", "cheering and applause", "applause and cheering", "crowd cheering", "laughing",
    "inaudible", "background noise", "noise", "blank audio",
})
_WEB = re.compile(r"(www\.|https?:|\.com\b|\.org\b|\.net\b)", re.I)
_WORDS = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class GuardSettings:
    no_speech_max: float = 0.6  # a segment more likely silence than this is dropped
    logprob_min: float = -1.0  # a segment decoded with less confidence than this is dropped


def normal(text: str) -> str:
    return " ".join(_WORDS.findall(text.lower()))


def keep_segment(segment: Any, settings: GuardSettings) -> bool:
    """A faster-whisper segment that is probably speech (the OR rule, see above)."""
    return segment.no_speech_prob <= settings.no_speech_max and segment.avg_logprob >= settings.logprob_min


def rejection(text: str) -> str | None:
    """Why a transcript is not a customer's words, or None when it may be."""
    words = normal(text)
    if not words:
        return "no words"
    if words in KNOWN_HALLUCINATIONS:
        return f"known hallucination {text.strip()!r}"
    if _WEB.search(text):
        return "a web address"
    return None


def guarded_text(segments: Iterable[Any], settings: GuardSettings) -> tuple[str, str, str | None]:
    """(text kept, text heard, why it was all rejected or None)."""
    heard, kept = [], []
    for segment in segments:  # a generator: decoding happens as it is consumed
        text = segment.text.strip()
        heard.append(text)
        if keep_segment(segment, settings):
            kept.append(text)
    heard_text, text = " ".join(heard).strip(), " ".join(kept).strip()
    if heard_text and not text:
        return "", heard_text, "low confidence or no speech"
    why = rejection(text) if text else None
    return ("" if why else text), heard_text, why
