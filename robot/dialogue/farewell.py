"""A goodbye and nothing else ("Thank you, that is all for today.") answered with the persona's
own ``farewell`` line, at once.

The embedded 135M model answered a goodbye with one of the robot's earlier lines or with
nothing of a goodbye ("Noted: thank you; ..."), and wrote it in 0.5-1 s after the turn ended
where a fixed line starts in a few milliseconds. A goodbye is matched like a yes to the offer
(``robot/dialogue/more.py``): one of the closing phrases (``prompts/farewell_words.txt``, or
the persona's ``farewell_words``) and otherwise only words that may stand around one
(``prompts/farewell_filler.txt``: thanks, "for today", "okay"). A thank-you alone is none: it
often comes before the next question. Once the farewell is said the visit ends soon after,
unless the visitor goes on (``Sessions.goodbye``, ``session.after_goodbye_s``).
"""

from __future__ import annotations

from typing import Sequence

from prompts import load_word_list
from robot.dialogue.more import YesWords

_MAX_WORDS = 14  # "okay, thank you very much, that is all for today, goodbye" and a little more


def is_goodbye(text: str, phrases: Sequence[str] | None = None) -> bool:
    """``text`` says goodbye and nothing else."""
    words = YesWords.of(load_word_list("farewell_words") if phrases is None else phrases,
                        filler="farewell_filler", max_words=_MAX_WORDS)
    return words.match(text)
