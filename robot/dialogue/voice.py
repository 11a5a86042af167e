"""The robot's voice in a conversation: replies and fixed texts spoken with the persona's
planned gestures, through barge-ins.

A barge-in cuts the speaker at once (``interrupt``); the sentence being spoken then waits
for the verdict on the interruption, and a false alarm (no words, the robot's own echo) is
resumed (``robot/dialogue/barge_in.py``). The persona can change between turns (a switch,
a reload): its gesture planner is rebuilt when it does.
"""

from __future__ import annotations

from typing import AsyncIterator, Callable

from config.schema import BargeInSettings, Persona
from robot.dialogue.barge_in import Interruption, aiter_of, speak_through_interruptions
from robot.gestures.planner import GesturePlanner
from robot.gestures.sentence import Sentence
from robot.reply.sentences import split_text
from robot.speaking.speaker import Speaker
from robot.speaking.spoken import SpokenReply


class Voice:
    def __init__(self, speaker: Speaker, barge_in: BargeInSettings) -> None:
        self.speaker, self.barge_in = speaker, barge_in
        self._interruption: Interruption | None = None  # a barge-in that cut the reply speaking now
        self._planner: tuple[Persona, GesturePlanner] | None = None  # built once per persona

    def interrupt(self, interruption: Interruption) -> None:
        """Barge-in: stop speaking now; what was being said waits for the verdict on it."""
        self._interruption = interruption
        self.speaker.cancel()

    async def speak(self, sentences: AsyncIterator[Sentence], persona: Persona, *, label: str,
                    turn_id: str | None, on_audio: Callable[[], None]) -> SpokenReply:
        """Speak, with the persona's planned gestures on sentences the LLM tagged none."""
        self._interruption = None
        return await speak_through_interruptions(self.speaker, self.gesture_planner(persona).annotated(sentences),
                                                 self._take_interruption, self.barge_in,
                                                 label=label, turn_id=turn_id, on_audio=on_audio)

    async def speak_text(self, text: str, persona: Persona, *, label: str, turn_id: str | None,
                         on_audio: Callable[[], None]) -> SpokenReply:
        """Speak a fixed text (not the LLM's), sentence by sentence, its gesture tags obeyed."""
        sentences = aiter_of(split_text(text, persona.gestures))
        return await self.speak(sentences, persona, label=label, turn_id=turn_id, on_audio=on_audio)

    def gesture_planner(self, persona: Persona) -> GesturePlanner:
        """The persona's planner (a persona switch or reload brings a new one)."""
        if self._planner is None or self._planner[0] is not persona:
            self._planner = (persona, GesturePlanner(persona.gesture_rules, persona.vocabulary))
        return self._planner[1]

    def _take_interruption(self) -> Interruption | None:
        interruption, self._interruption = self._interruption, None
        return interruption
