"""Cut a streaming LLM reply into sentences, so the first one is spoken while the LLM writes on."""

from __future__ import annotations

import re

# A sentence ends at . ! ? (or an ellipsis) followed by white space. Abbreviations such as
# "Mr." would split early; a split there costs a short pause, nothing worse.
_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")
_SOFT_LIMIT = 220  # a run-on "sentence" longer than this is cut at a comma or space


class SentenceSplitter:
    """``feed`` text deltas, get back the sentences completed so far; ``flush`` the rest."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, delta: str) -> list[str]:
        self._buffer += delta
        sentences: list[str] = []
        while True:
            cut = self._next_cut()
            if cut is None:
                return sentences
            sentence, self._buffer = self._buffer[:cut].strip(), self._buffer[cut:].lstrip()
            if sentence:
                sentences.append(sentence)

    def flush(self) -> list[str]:
        rest, self._buffer = self._buffer.strip(), ""
        return [rest] if rest else []

    def _next_cut(self) -> int | None:
        for match in _END.finditer(self._buffer):
            # never cut inside a [gesture:...] tag that is still open
            if self._buffer.count("[", 0, match.start()) <= self._buffer.count("]", 0, match.start()):
                return match.end()
        if len(self._buffer) > _SOFT_LIMIT:
            comma = self._buffer.rfind(", ", 0, _SOFT_LIMIT)
            space = self._buffer.rfind(" ", 0, _SOFT_LIMIT)
            cut = comma + 2 if comma > 0 else space + 1
            return cut if cut > 0 else None
        return None
