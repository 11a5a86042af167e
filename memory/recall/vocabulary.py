"""The few names speech recognition listens for in one turn.

Whisper hears a name it is told about far better, but only a short list: with tiny.en on
espeak-ng voices (bench/hearing.py), nine names made it hear "Arashiyama" for "Nara" (it
leans to the last name it was told). A shop's knowledge holds dozens. So a turn gets the
persona's own short ``vocabulary`` (the names it chose, always), and at most ``max_names``
more of the knowledge's: the places the visitor named (their profile) and the names of the
current topic (the robot's last reply) that the vocabulary lacks, the most recent last.
"""

from __future__ import annotations

from typing import Iterable, Sequence


class TurnVocabulary:
    def __init__(self, base: Sequence[str], names: Iterable[str] = (), max_names: int = 2) -> None:
        self.base = tuple(base)
        # every name a turn may be given: the persona's and the knowledge's
        self.names = tuple(dict.fromkeys([*self.base, *names]))
        self.max_names = max_names
        self._canonical = {n.lower(): n for n in self.names}

    def choose(self, places: Iterable[str] = (), topic: Iterable[str] = ()) -> tuple[str, ...]:
        """The names for this turn: the persona's vocabulary, then the knowledge's names among
        ``places`` (the visitor's, in the order named) and ``topic`` (names in the robot's last
        reply) that it lacks, at most ``max_names`` of them, the most recent last."""
        recent: list[str] = []
        for name in [*places, *topic]:
            known = self._canonical.get(name.strip().lower())
            if known is not None and known not in self.base:
                if known in recent:
                    recent.remove(known)
                recent.append(known)
        return (*self.base, *(recent[-self.max_names:] if self.max_names else ()))
