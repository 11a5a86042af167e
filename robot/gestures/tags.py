"""Inline gesture tags in the LLM's reply: ``[gesture:NAME]``.

Tags are cut out of the text before it is spoken. A known gesture goes with the sentence
it stands in and is published when that sentence starts playing; an unknown one is dropped
with a warning (small models invent gestures).
"""

from __future__ import annotations

import logging
import re
from typing import Mapping

from prompts import load_prompt

log = logging.getLogger(__name__)

TAG = re.compile(r"\[\s*gesture\s*:\s*([A-Za-z0-9_\-]+)\s*\]", re.IGNORECASE)
# Other bracketed stage directions a model may emit ("[smiles]", "*waves*") are not speech.
_STAGE = re.compile(r"\[[^\]]{0,40}\]|\*[^*]{1,40}\*")
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,.!?;:])")


def extract_gestures(raw: str, vocabulary: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """The text to speak and the known gestures tagged in ``raw`` (unknown ones dropped)."""
    known = {g.lower() for g in vocabulary}
    gestures: list[str] = []
    for name in TAG.findall(raw):
        if name.lower() in known:
            gestures.append(name.lower())
        else:
            log.warning("dropped unknown gesture %r", name.lower())
    text = _STAGE.sub(" ", TAG.sub(" ", raw))
    text = _SPACES.sub(" ", text).strip()
    text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)
    return text, tuple(gestures)


def gesture_instructions(vocabulary: Mapping[str, str]) -> str:
    """The lines added to the role prompt so the LLM knows which gestures it has."""
    if not vocabulary:
        return ""
    lines = "\n".join(f"- {name}: {description}" for name, description in vocabulary.items())
    return load_prompt("gestures").format(example=next(iter(vocabulary)), gestures=lines).strip()
