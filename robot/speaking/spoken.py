"""What the speaker hands around: a rendered sentence, and what a reply actually said."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from robot.gestures.sentence import Sentence
from speech.types import SpeechAudio


@dataclass(frozen=True)
class Rendered:
    """A sentence ready to play: its audio (None for a text speaker) and how long it lasts.
    ``silent``: nothing to play (a gesture-only sentence, or one the TTS failed on)."""

    sentence: Sentence
    duration_s: float
    audio: SpeechAudio | None = None
    silent: bool = False
    render_s: float = 0.0  # time the TTS took


@dataclass
class SpokenReply:
    """What a reply actually said: whole sentences, then the spoken start of a cut one."""

    sentences: list[str] = field(default_factory=list)
    partial: str = ""
    interrupted: bool = False
    unsaid: list[Sentence] = field(default_factory=list)  # after a cut: the rest, to resume
    by_customer: bool = False  # the cut was a barge-in confirmed as the customer speaking
    gestures: list[str] = field(default_factory=list)
    first_audio_at: float | None = None  # monotonic time the first sentence started
    first_sentence_at: float | None = None  # when the first sentence came from the reply
    first_render_s: float | None = None  # TTS time of the first sentence played

    @property
    def text(self) -> str:
        return " ".join(self.sentences + ([self.partial] if self.partial else []))

    def remembered(self, without: str | None = None) -> str:
        """What memory keeps of a reply: what was said, marked when the customer cut it. A
        filler (``without``: "Let me check that for you.") was said but holds nothing to
        remember; kept, it would also make the next prompts differ with the machine's load."""
        sentences = list(self.sentences)
        if without and sentences and sentences[0] == without:
            sentences = sentences[1:]
        text = " ".join(sentences + ([self.partial] if self.partial else []))
        return f"{text} [interrupted]" if self.by_customer and text else text

    def resumed_with(self, rest: SpokenReply) -> SpokenReply:
        """This reply, cut by a false alarm, and then the rest of it said after all. The cut
        sentence's two halves are one sentence again."""
        parts = self.sentences + [f"{self.partial} {rest.text}".strip()] if rest.text else self.sentences
        return SpokenReply(sentences=[p for p in parts if p], partial=rest.partial, interrupted=rest.interrupted,
                           unsaid=rest.unsaid, gestures=self.gestures + rest.gestures,
                           first_audio_at=self.first_audio_at, first_sentence_at=self.first_sentence_at,
                           first_render_s=self.first_render_s)

    def heard(self, text: str, fraction: float) -> None:
        if fraction >= 1.0:
            self.sentences.append(text)
            return
        # Words in proportion to the audio played: the TTS gives no word timings.
        words = text.split()
        said = math.floor(len(words) * fraction)
        self.partial = " ".join(words[:said])
        self.unsaid.append(Sentence(" ".join(words[said:])))
