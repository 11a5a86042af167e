"""The few names speech recognition listens for in one turn.

Whisper hears a name it is told about far better, but only a short list: measured with
tiny.en on espeak-ng voices (bench/hearing.py), "Nara" was heard in 3 of 8 place-name
trials with the fixed list "Kyoto, Nara, Fushimi Inari", 0 of 8 with nine names (it heard
"Arashiyama" instead: it leans to the last name it was told), and 7 of 8 with the two names
the visitor was talking about, said as a phrase ("Kyoto and Nara."). So each turn gets at
most ``max_names`` names: the places the visitor named (their profile) and the names of the
current topic (the robot's last reply), the most recent last; before anything is known, the
persona's first ``vocabulary`` names.
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
        """The names for this turn: ``places`` (the visitor's, in the order named) then ``topic``
        (names in the robot's last reply), those the robot knows, the most recent last."""
        if not self.max_names:
            return ()
        recent: list[str] = []
        for name in [*places, *topic]:
            known = self._canonical.get(name.strip().lower())
            if known is not None:
                if known in recent:
                    recent.remove(known)
                recent.append(known)
        return tuple(recent[-self.max_names:]) if recent else self.base[:self.max_names]
