"""Inline gesture tags in the LLM's reply: ``[gesture:NAME]``.

Tags are cut out of the text before it is spoken. A known gesture goes with the sentence
it stands in and is published when that sentence starts playing; an unknown one is dropped
with a warning (small models invent gestures).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field

from prompts import load_prompt

log = logging.getLogger(__name__)

TAG = re.compile(r"\[\s*gesture\s*:\s*([A-Za-z0-9_\-]+)\s*\]", re.IGNORECASE)
# Other bracketed stage directions a model may emit ("[smiles]", "*waves*") are not speech.
_STAGE = re.compile(r"\[[^\]]{0,40}\]|\*[^*]{1,40}\*")


@dataclass(frozen=True)
class Sentence:
    """One sentence to speak, with the gestures to perform as it starts."""

    text: str
    gestures: tuple[str, ...] = ()
    dropped: tuple[str, ...] = field(default=(), compare=False)  # unknown gestures


def parse_sentence(raw: str, vocabulary: set[str] | dict[str, str]) -> Sentence:
    known = {g.lower() for g in vocabulary}
    gestures: list[str] = []
    dropped: list[str] = []
    for name in TAG.findall(raw):
        (gestures if name.lower() in known else dropped).append(name.lower())
    for name in dropped:
        log.warning("dropped unknown gesture %r", name)
    text = _STAGE.sub(" ", TAG.sub(" ", raw))
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    return Sentence(text=text, gestures=tuple(gestures), dropped=tuple(dropped))


def gesture_instructions(vocabulary: dict[str, str]) -> str:
    """The lines added to the role prompt so the LLM knows which gestures it has."""
    if not vocabulary:
        return ""
    lines = "\n".join(f"- {name}: {description}" for name, description in vocabulary.items())
    return load_prompt("gestures").format(example=next(iter(vocabulary)), gestures=lines).strip()
