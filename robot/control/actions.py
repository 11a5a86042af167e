"""What a body or an operator may ask the running robot to do (MQTT commands call this),
and the one object that does it: ``RobotCommands`` over the controller and memory."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Awaitable, Callable, Protocol

from config.loader import load_persona
from config.schema import Persona, TtsSettings
from prompts import load_prompt
from robot.core.events import ForgottenEvent
from robot.dialogue.consult import Consult
from robot.dialogue.controller import DialogueController
from robot.dialogue.knowledge import ShopKnowledge
from robot.dialogue.sessions import Sessions
from robot.gestures.tags import gesture_instructions

log = logging.getLogger(__name__)


class RobotControl(Protocol):
    async def say(self, text: str, remember: bool = False) -> None:
        """Speak the given text now (queued behind the sentence being spoken); it enters the
        dialogue memory only if ``remember``."""
        ...

    async def stop_speaking(self) -> None:
        """Stop speaking at once; drop the rest of the current reply's audio."""
        ...

    def mute(self) -> None:
        """Ignore the microphone until unmute()."""
        ...

    def unmute(self) -> None: ...

    async def switch_persona(self, path: Path) -> None:
        """Load another persona file; both memory stores are kept. Raises ConfigError."""
        ...

    async def reload(self) -> None:
        """Re-read the persona file and settings that can change live. Raises ConfigError."""
        ...

    async def forget(self, user: str) -> str:
        """Delete all of a user's memory; returns a one-line account of what went."""
        ...

    async def start_session(self, visitor: str | None) -> None:
        """A new visitor's session (the current one ends first); None: anonymous."""
        ...

    async def end_session(self) -> bool:
        """End the current visitor's session; False when none was open."""
        ...


def persona_voice(persona: Persona, tts: TtsSettings) -> tuple[str | None, int]:
    """The espeak-ng voice and rate a persona speaks with: its own, else the settings' ``tts``;
    with no voice anywhere, its language's (espeak-ng's default is English)."""
    voice = persona.voice or tts.voice or (None if persona.language.startswith("en") else persona.language)
    return voice, persona.rate or tts.rate


def persona_prompt(persona: Persona, tts: TtsSettings = TtsSettings()) -> str:
    """The persona's part of the role prompt: its role text, how long a spoken answer may be
    (its ``max_reply_s`` in words at the rate it speaks: ``persona_voice``), and its gestures."""
    words = int(persona.max_reply_s * persona_voice(persona, tts)[1] / 60)
    brevity = load_prompt("brevity").format(words=words, seconds=f"{persona.max_reply_s:g}").strip()
    extra = gesture_instructions(persona.gestures)
    return persona.role_prompt.strip() + f"\n\n{brevity}" + (f"\n\n{extra}" if extra else "")


class RobotCommands:
    """``RobotControl`` for a running robot: speech commands go to the controller, a persona
    switch to the controller, the speaker's voice, speech recognition's language and memory's
    role prompt together. ``tts``: the settings' voice and rate, for a persona without its own."""

    def __init__(self, controller: DialogueController, persona_path: Path | None = None,
                 forget_user: Callable[[str], Awaitable[str]] | None = None,
                 tts: TtsSettings = TtsSettings(), retrieval_tokens: int = 300,
                 understanding: object | None = None) -> None:
        self.controller = controller
        self.persona_path = persona_path
        self._forget_user = forget_user
        self._tts = tts
        self._retrieval_tokens = retrieval_tokens  # the shop's entries get their share of it
        self._understanding = understanding  # the knowledge search's models (memory/recall/embedding.py)

    async def say(self, text: str, remember: bool = False) -> None:
        await self.controller.say(text, record=remember)

    async def stop_speaking(self) -> None:
        await self.controller.stop_speaking()

    def mute(self) -> None:
        self.controller.mute()

    def unmute(self) -> None:
        self.controller.unmute()

    async def switch_persona(self, path: Path) -> None:
        """All or nothing: the file is validated whole (schema, gestures, voice against
        espeak-ng) before anything changes, and a step that fails undoes the ones before it."""
        persona = load_persona(path)  # ConfigError leaves the current persona in place (its knowledge files too)
        knowledge = ShopKnowledge.of_persona(persona, self._retrieval_tokens, self._understanding)  # indexed first
        if knowledge is not None:
            await asyncio.to_thread(knowledge.embed)  # before anything changes: a switch is all or nothing
        old = self.controller.persona
        if persona.memory != old.memory:
            # the memory's strategy, timer and wording are fixed when it starts
            raise ValueError(f"{Path(path).name}: its memory settings differ from the running ones; "
                             "restart the robot to change them")
        transcriber = self.controller.transcriber
        if transcriber is not None and persona.language != old.language:
            transcriber.listen_for(persona.language)  # ValueError (an English-only model): nothing changed
        speaker = self.controller.speaker
        try:
            speaker.set_voice(*persona_voice(persona, self._tts))
            await self.controller.memory.set_persona_prompt(persona_prompt(persona, self._tts))
        except BaseException:
            speaker.set_voice(*persona_voice(old, self._tts))
            if transcriber is not None:
                transcriber.listen_for(old.language)
            raise
        self.controller.persona, self.persona_path = persona, Path(path)
        self.controller.knowledge = knowledge
        self.controller.consulting.consult = Consult.of_persona(persona, knowledge, self.controller.events)
        log.info("persona switched to %s (%s); memory kept", persona.name, path)

    async def reload(self) -> None:
        if self.persona_path is None:
            raise RuntimeError("this robot was not started from a persona file")
        await self.switch_persona(self.persona_path)

    async def forget(self, user: str) -> str:
        if self._forget_user is None:
            raise RuntimeError("this robot has no persistent memory to forget")
        report = await self._forget_user(user)
        self.controller.events.publish(ForgottenEvent(visitor=user, by="operator"))  # the body forgets too
        return report

    async def start_session(self, visitor: str | None) -> None:
        await self._sessions().start(visitor)

    async def end_session(self) -> bool:
        return await self._sessions().end("command")

    def _sessions(self) -> Sessions:
        if self.controller.sessions is None:
            raise RuntimeError("this robot keeps no visitor sessions")
        return self.controller.sessions
