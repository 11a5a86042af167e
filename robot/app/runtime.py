"""Put the robot together from its settings: the one place where components are chosen.

``robot run``, ``robot chat``, ``robot simulate`` and the end-to-end tests all start the
robot through ``open_runtime``, so they differ only in their audio ends.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator, Callable, Literal, Sequence

from config.loader import ConfigError
from config.schema import Persona, Settings
from memory.core.base import DialogueMemory
from memory.core.tokens import count_tokens
from memory.stores.protocol import MemoryStore
from memory.visitors import VisitorMemory
from robot.control.actions import RobotCommands, persona_prompt, persona_voice
from robot.core import redact
from robot.core.events import ErrorEvent, EventBus, MemoryEvent, RecordingPublisher
from robot.dialogue.consult import Consult
from robot.dialogue.controller import DialogueController
from robot.dialogue.knowledge import ShopKnowledge
from robot.dialogue.sessions import Sessions
from robot.llm import LLMClient, open_llms
from robot.reply.swap_hold import SwapHold
from robot.reply.timing import ReplyDeadlines
from robot.speaking.speaker import AudioSpeaker, Speaker, TextSpeaker
from speech.audio.room import Room
from speech.listen import FrontEnd

if TYPE_CHECKING:
    from memory.recall.embedding import Understanding
    from speech.echo import EchoCanceller

log = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 400
# A shop's knowledge is embedded at start for the search by meaning (cached between starts); a
# start waits this long for it, then answers by words and names until it is done.
EMBED_WAIT_S = 15.0
EMBED_STOP_S = 3.0  # the most a stop waits for the embedding to end its batch; then the process leaves it
KNOWLEDGE_EMBED_THREAD = "knowledge-embed"

AudioOut = Literal["device", "wav", "text", "none"]


@dataclass
class Runtime:
    settings: Settings
    controller: DialogueController
    commands: RobotCommands
    memory: DialogueMemory
    llm: LLMClient
    events: EventBus
    recorder: RecordingPublisher
    clock: object | None = None
    console: object | None = None  # robot.console.Console when settings.console.enabled

    async def advance_clock(self, seconds: float) -> None:
        """Simulation only: let ``seconds`` of memory time pass at once (timers fire, an
        idle session ends). Without a clock (a memory given by the caller): nothing to advance."""
        if self.clock is None:
            return
        if not hasattr(self.clock, "advance"):
            raise RuntimeError("this runtime runs on the system clock; only a simulation can advance it")
        await self.clock.advance(seconds)  # type: ignore[attr-defined]
        # Minutes passed: the summary the timer started has had its time to finish.
        await self.memory.wait_idle()  # type: ignore[attr-defined]




def _speaker(settings: Settings, persona: Persona, audio_out: AudioOut, wav_dir: Path | None,
             events: EventBus, realtime: bool = False, echo: EchoCanceller | None = None,
             room: Room | None = None) -> Speaker:
    """The robot's voice. The echo canceller hears what it says: from a sound card, every
    block as the card takes it, the silence between replies included (the reference keeps
    the card's clock); from any other sink, every block as the speaker writes it."""
    if audio_out == "text":
        return TextSpeaker(persona.name, events)
    from speech.audio import NullSink, SoundDeviceSink, WavSink
    from speech.tts import Synthesizer

    if audio_out == "wav":
        sink = WavSink(wav_dir or Path("out"), realtime=realtime)
    elif audio_out == "device":
        sink = SoundDeviceSink(settings.audio.output_device, settings.audio.device_sample_rate, reference=echo)
        echo = None  # the card tells it
    else:
        sink = NullSink()
    if room is not None:
        sink = room.sink(sink)  # a simulated room: the robot's voice reaches its microphone
    voice, rate = persona_voice(persona, settings.tts)
    tap = echo.far if echo is not None else None
    return AudioSpeaker(lambda v, r: Synthesizer(voice=v, rate=r), sink, voice, rate, events, tap=tap)


def _front_end(settings: Settings) -> FrontEnd:
    """webrtcvad, Silero as the second stage, the echo canceller when barge-in needs it, and
    the turn-completion model that ends a finished turn at its first short pause."""
    from speech.echo import EchoCanceller
    from speech.listen import SecondStage
    from speech.silero import SileroStream, load_session
    from speech.smart_turn import SmartTurn
    from speech.turn_end import EndOfTurn, UnfinishedHold
    from speech.vad import Endpointer

    b, v = settings.barge_in, settings.vad
    echo = (EchoCanceller(b.echo_delay_ms, b.linear_echo_ms, b.linear_echo_quick_start)
            if b.enabled and b.echo_cancel else None)
    second = SecondStage(SileroStream(load_session()), strict_threshold=b.threshold, strict_confirm_ms=b.confirm_ms,
                         soft_threshold=SecondStage.soft_threshold if b.quiet_voice else None)
    turn_end = EndOfTurn(SmartTurn(), v.pause_ms, v.turn_complete_threshold, wait_for_words=v.end_of_turn_words,
                         words_ms=v.words_alone_ms or None) if v.end_of_turn == "smart_turn" else None
    hold = UnfinishedHold(v.unfinished_hold_ms) if v.unfinished_hold_ms > v.hangover_ms else None
    return FrontEnd(Endpointer(v), second, echo, turn_end, hold)


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    persona: Persona,
    persona_path: Path | None,
    *,
    audio_out: AudioOut = "wav",
    wav_dir: Path | None = None,
    listen: bool = True,
    simulated_clock: bool = False,
    memory: DialogueMemory | None = None,
    realtime: bool = False,
    room: Room | None = None,
    keep_events: int | None = None,
) -> AsyncIterator[Runtime]:
    """A ready robot. ``listen=False`` skips VAD and STT (typed chat); ``realtime``: wav
    output takes as long as the speech lasts (a simulation watched on the console, or in a
    ``room``, where the robot's voice also goes back into the microphone). ``keep_events``:
    how many of the latest events ``Runtime.recorder`` keeps (None: all of them, for a
    simulation's report; a robot that runs for days keeps a few)."""
    # Known secrets are masked in everything said and published, whoever started the robot.
    redact.register([settings.llm.api_key, settings.mqtt.password, settings.console.token])
    if listen:
        _listen_for(settings, persona, persona_path)
    if settings.console.enabled:  # a console that may not start stops us before any model loads
        from robot.console.auth import check_bind

        check_bind(settings.console.host, settings.console.token)
    async with AsyncExitStack() as stack:
        recorder = RecordingPublisher(keep_events)
        events = EventBus(recorder)
        summaries = memory is None and persona.memory.strategy != "full"
        # The store first: an unreachable database stops the robot before any model loads.
        store = await _connect_store(settings) if summaries else None
        if store is not None:
            stack.push_async_callback(store.close)  # if what follows fails; the memory closes it first
        llms = await stack.enter_async_context(open_llms(settings.llm, summaries=summaries))
        llm = llms.reply
        clock = None
        # The shop's knowledge, indexed now (robot/dialogue/knowledge.py): its names also fill the profile's places.
        models = await asyncio.to_thread(understanding_of, settings)
        knowledge = await asyncio.to_thread(ShopKnowledge.of_persona, persona, settings.memory.retrieval_tokens, models)
        if knowledge is not None:
            embedding = await embedded(knowledge, EMBED_WAIT_S)
            stack.push_async_callback(_stop_embedding, knowledge, embedding)
        if memory is None:
            names = knowledge.vocabulary.names if knowledge is not None else ()
            # A summary's new role prompt waits while the robot listens or thinks (robot/reply/swap_hold.py).
            hold = SwapHold()
            events.add(hold)
            memory, clock = await _open_memory(settings, persona, llms.summary, events, simulated_clock, store, names,
                                               hold.allows_swap)
            stack.push_async_callback(memory.aclose, settings.session.exit_wait_s)
        front_end = transcriber = None
        if listen:
            from speech.stt import Transcriber

            front_end = _front_end(settings)
            transcriber = Transcriber(settings.stt)
            await transcriber.aload()
        echo = front_end.echo if front_end is not None else None
        speaker = _speaker(settings, persona, audio_out, wav_dir, events, realtime, echo, room)
        stack.push_async_callback(speaker.aclose)  # a sound card's stream stays open until then
        controller = DialogueController(
            persona=persona,
            memory=memory,
            llm=llm,
            speaker=speaker,
            events=events,
            front_end=front_end,
            transcriber=transcriber,
            barge_in=settings.barge_in,
            reply_deadlines=ReplyDeadlines(settings.llm.filler_after_s, settings.llm.give_up_after_s),
            tts_rate=settings.tts.rate,
            start_at_pause=settings.llm.start_at_pause,
            # printed text gains nothing from a clause on its own line
            first_clause=settings.tts.first_chunk == "clause" and audio_out != "text",
        )
        controller.knowledge = knowledge
        controller.consulting.consult = Consult.of_persona(persona, knowledge, events)
        if settings.llm.backend == "embedded" and settings.llm.warm_prompt:
            from robot.reply.prompt_warmer import PromptWarmer

            warmer = controller.warmer = PromptWarmer(llm, lambda: controller.memory.prompt_prefix(),
                                                      lambda: controller.idle)
            events.add(warmer)  # a role prompt rewritten, a session started or ended: read it ahead
            stack.push_async_callback(warmer.aclose)
        commands = RobotCommands(controller, persona_path, forget_user=getattr(memory, "forget_user", None),
                                 tts=settings.tts, retrieval_tokens=settings.memory.retrieval_tokens,
                                 understanding=models)
        hooks = None
        if settings.mqtt.enabled:
            from robot.mqtt import MqttHooks

            hooks = MqttHooks(settings.mqtt, commands)
            await hooks.start()
            stack.push_async_callback(hooks.aclose)
            events.add(hooks)
        console = None
        if settings.console.enabled:
            from robot.control.commands import DEFAULT_PERSONA_DIR
            from robot.console import open_console

            console = await stack.enter_async_context(open_console(
                settings.console, commands, persona_dir=settings.mqtt.persona_dir or DEFAULT_PERSONA_DIR,
                mqtt_stats=hooks.stats if hooks else None))
            events.add(console.hub)
            events.add(console.metrics)
        await memory.start()
        if isinstance(memory, VisitorMemory):
            controller.sessions = Sessions(memory, events, memory.clock, settings.session.idle_timeout_s,
                                           busy=lambda: controller.busy,
                                           after_goodbye_s=settings.session.after_goodbye_s)
            controller.sessions.start_watching()
            stack.push_async_callback(controller.sessions.aclose)  # before memory's close: its forced summary
        controller.announce()
        if controller.warmer is not None:
            controller.warmer.request()  # the persona's prompt, before the first visitor speaks
        yield Runtime(settings, controller, commands, memory, llm, events, recorder, clock, console)


def understanding_of(settings: Settings) -> "Understanding":
    """The models of the knowledge search (``settings.knowledge``), loaded once per process."""
    from config.schema import default_cache_dir
    from memory.recall.embedding import understanding
    from models import resolve_model_path

    k = settings.knowledge
    sentences = resolve_model_path(k.sentence_model, "sentence") if k.sentence_model else None
    words = resolve_model_path(k.word_model, "words") if k.word_model else None
    return understanding(sentences, words, k.cache_dir or default_cache_dir() / "embeddings")


async def embedded(knowledge: ShopKnowledge, wait_s: float) -> threading.Thread:
    """Embed the knowledge in a thread, waiting up to ``wait_s``; a larger shop goes on embedding
    in the background while the robot answers by words and names. The thread, for the stop."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def embed() -> None:  # a thread of its own, at a lower priority: never the executor's
        from memory.recall.knowledge.vectors import yield_to_replies

        yield_to_replies()
        try:
            knowledge.embed()
        finally:
            try:
                loop.call_soon_threadsafe(lambda: done.done() or done.set_result(None))
            except RuntimeError:  # the robot stopped meanwhile: nobody waits
                pass

    # Not a daemon: a daemon thread left inside numpy when the interpreter exits hangs the exit in
    # OpenBLAS's own exit handler, for good (seen with pytest and `robot chat` on a busy machine).
    # The runtime's close asks it to stop at its next batch; the interpreter's exit waits for that.
    thread = threading.Thread(target=embed, name=KNOWLEDGE_EMBED_THREAD, daemon=False)
    thread.start()
    try:
        await asyncio.wait_for(asyncio.shield(done), wait_s)
    except asyncio.TimeoutError:
        log.info("the knowledge's %d entries are still being embedded: answers go by words and names "
                 "until it is done", len(knowledge.index))
    return thread


async def _stop_embedding(knowledge: ShopKnowledge, thread: threading.Thread) -> None:
    """At the robot's stop: an embedding still running ends at its next batch, and the stop waits
    for it (a fraction of a second; ``EMBED_STOP_S`` at most, then the interpreter's exit waits for
    the batch, or ``robot.app.cli.run`` leaves the process). Left in numpy by an exit, it could hang
    that exit for good (``KnowledgeIndex.stop_embedding``)."""
    knowledge.stop_embedding()
    if thread.is_alive():
        await asyncio.to_thread(thread.join, EMBED_STOP_S)
        if thread.is_alive():
            log.info("the knowledge's embedding did not stop within %.0f s: the process leaves it", EMBED_STOP_S)


def _listen_for(settings: Settings, persona: Persona, persona_path: Path | None) -> None:
    """The persona's language is the customer's: speech recognition listens for it. An
    English-only model (``*.en``) cannot: that is a configuration error, before any model loads."""
    from speech.stt import whisper_language

    try:
        settings.stt.language = whisper_language(persona.language, settings.stt.model)
    except ValueError as exc:
        raise ConfigError(persona_path or "persona", [f"key 'language': {exc}"]) from None


async def _connect_store(settings: Settings) -> MemoryStore:
    """The deployment's store, reached and migrated; where it is goes to the log. A bad
    ``memory.store`` is a configuration error; an unreachable server is ``StoreUnavailable``
    (one line naming host and port; the CLI exits with status 2)."""
    from memory.stores.location import StoreLocationError, location_of
    from memory.stores.opening import open_store

    try:
        location = location_of(settings.memory.store, settings.memory.db_path)
    except StoreLocationError as exc:
        raise ConfigError("memory.store", [str(exc)]) from None
    store = open_store(location)
    await store.connect()  # type: ignore[attr-defined] - both stores have it
    log.info("memory store: %s", location)
    if location.kind == "postgresql":
        from memory.stores.bounded import BoundedStore

        # A server lost mid-conversation must not hold a reply past the filler's deadline:
        # the memory learns within half of it, and talks on from RAM (memory/stores/bounded.py).
        return BoundedStore(store, settings.llm.filler_after_s / 2)  # type: ignore[return-value]
    return store


async def _open_memory(settings: Settings, persona: Persona, llm: LLMClient, events: EventBus,
                       simulated_clock: bool, store: MemoryStore | None = None,
                       names: Sequence[str] = (),
                       swap_when: Callable[[], bool] | None = None) -> tuple[DialogueMemory, object | None]:
    """One memory per visitor, with the persona's strategy, over the deployment's store."""
    from memory.core.clock import ManualClock, SystemClock
    from memory.full_history import FullHistoryMemory
    from memory.visitors import Retention, VisitorMemory

    clock = ManualClock() if simulated_clock else SystemClock()
    if persona.memory.strategy == "full":
        async def open_plain(name: str, prompt: str) -> DialogueMemory:
            return FullHistoryMemory(prompt)

        plain = VisitorMemory(open_plain, persona_prompt(persona, settings.tts), clock)
        return plain, clock  # the idle timeout's clock
    from memory import LlmLimits, StoreSettings, SummaryPolicy, create_memory
    from memory.core.tokens import ServerTokenCounter
    from memory.recall.profile import make_slots

    # The one place where memory's plain settings are made from the validated YAML.
    policy = SummaryPolicy(**persona.memory.model_dump(), vocabulary=persona.vocabulary, language=persona.language,
                           knowledge_names=names)
    # The persona's profile slots, made once here in a worker thread: making them loads
    # dateparser's language data and compiles its patterns (0.25-0.7 s on a two-core Xeon).
    # Made by the first visitor's memory, at their first pause, that held the event loop: the
    # listen loop fell 0.4-0.6 s behind and the first turn waited out its whole hangover. Every
    # visitor's memory gets these same slots (``make_slots`` keeps them).
    await asyncio.to_thread(make_slots, policy.profile, policy.vocabulary, policy.language, names)
    store_settings = StoreSettings(**settings.memory.model_dump())
    store = store or await _connect_store(settings)
    # The address of the embedded server (the OpenAI client's), for its /tokenize endpoint.
    server = getattr(getattr(llm, "_client", None), "base_url", None) if settings.llm.backend == "embedded" else None

    def on_update(version: int, role_prompt: str, summary: str) -> None:
        share = summary if settings.mqtt.share_memory_text else None
        events.publish(MemoryEvent(
            version=version, prompt_chars=len(role_prompt),
            prompt_tokens=count_tokens(role_prompt), summary=share,
        ))

    async def open_visitor(name: str, prompt: str) -> DialogueMemory:
        return await create_memory(
            persona_prompt=prompt,
            policy=policy,
            store_settings=store_settings,
            # Summaries need more room than a spoken reply, and must repeat names and facts:
            # no repetition penalties for them (measured: with them SmolLM2's summaries failed).
            llm=functools.partial(llm.complete, max_tokens=SUMMARY_MAX_TOKENS,
                                  frequency_penalty=0.0, presence_penalty=0.0),
            clock=clock,
            on_update=on_update,
            # Summary requests must fit the model's context in its real tokens: the embedded
            # llama.cpp server counts them (/tokenize); other servers get the cautious heuristic.
            limits=LlmLimits(context_tokens=settings.llm.context_tokens, answer_tokens=SUMMARY_MAX_TOKENS),
            count_tokens=ServerTokenCounter(str(server)) if server else None,
            store=store,
            user=name,
            # The database away mid-conversation: the talk goes on, turns wait in RAM.
            on_store_error=lambda message: events.publish(ErrorEvent(source="memory", message=message)),
            swap_when=swap_when,
        )

    retention = Retention(settings.memory.retention_days, settings.memory.anonymous_retention_days)
    return VisitorMemory(open_visitor, persona_prompt(persona, settings.tts), clock, store, retention), clock
