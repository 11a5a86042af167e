"""Turning turns into summary prompts, and LLM output into a clean, bounded summary."""

from __future__ import annotations

import logging
import re
from typing import Iterable

from memory.base import Message
from memory.facts import guard, split_marker
from memory.records import StoredTurn
from memory.tokens import count_tokens
from prompts import load_chat_prompt, load_prompt

log = logging.getLogger(__name__)

NO_SUMMARY = "(nothing yet)"
LABELS = {"user": "Customer", "assistant": "Consultant"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LEADING_LABEL = re.compile(r"^\s*(\[?updated memory\]?|memory|summary)\s*:\s*", re.I)


def render_turns(turns: Iterable[StoredTurn]) -> str:
    return "\n".join(f"{t.speaker or LABELS[t.role]}: {t.text}" for t in turns) or "(none)"


def turn_content(turn: StoredTurn) -> str:
    """A turn as a chat message's content: a known speaker name goes in front (replayed corpora)."""
    return f"{turn.speaker}: {turn.text}" if turn.speaker else turn.text


def render_role_prompt(persona_prompt: str, summary: str | None) -> str:
    """The role prompt the reply LLM sees: the persona alone until there is a summary."""
    if not summary:
        return persona_prompt
    return load_prompt("role_prompt").format(persona=persona_prompt.strip(), summary=summary.strip()).strip()


def _chat(name: str, **fields: object) -> list[Message]:
    return [{"role": role, "content": text.format(**fields)} for role, text in load_chat_prompt(name)]


def rsum_messages(previous_summary: str, turns: list[StoredTurn], max_sentences: int) -> list[Message]:
    # Instructions in the system message, data in the user message: small local models
    # echo instructions that come inside the data.
    return _chat("rsum_update", max_sentences=max_sentences, previous_summary=previous_summary or NO_SUMMARY,
                 dialogue=render_turns(turns))


def swin_messages(previous_summary: str, context: list[StoredTurn], turns: list[StoredTurn],
                  max_sentences: int) -> list[Message]:
    return _chat("swin_update", max_sentences=max_sentences, previous_summary=previous_summary or NO_SUMMARY,
                 context=render_turns(context), dialogue=render_turns(turns))


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def clean_summary(raw: str, max_sentences: int, max_tokens: int, echo_of: str = "",
                  labels: Iterable[str] = ()) -> str:
    """The LLM's answer as a memory: without labels, without lines of transcript or
    instructions it echoed (``echo_of``: the prompt it was given; ``labels``: speaker
    names), without repeated sentences, cut to the sentence and token limits."""
    prefixes = tuple(f"{label.lower()}:" for label in labels)
    lines: list[str] = []
    for line in raw.splitlines():
        if line.strip().lower().startswith(prefixes) or (_normal(line) and _normal(line) in map(_normal, lines)):
            continue  # a transcript line, or a list item the model repeats in a loop
        lines.append(line.strip())
    text = _LEADING_LABEL.sub("", " ".join(lines).strip()).strip().strip('"').strip()
    echo = _normal(echo_of)
    sentences: list[str] = []
    for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
        key = _normal(sentence)
        if not key or _LEADING_LABEL.match(sentence + ":") or key in (_normal(k) for k in sentences):
            continue  # empty, a stray label, or a repeat (small models loop)
        if len(key) > 20 and key in echo:
            continue  # copied from the instructions or the transcript, not a memory
        sentences.append(_LEADING_LABEL.sub("", sentence))
    if len(sentences) > max_sentences:
        log.info("summary had %d sentences; kept the first %d", len(sentences), max_sentences)
        sentences = sentences[:max_sentences]
    while len(sentences) > 1 and count_tokens(" ".join(sentences)) > max_tokens:
        sentences.pop()  # the prompt asked for the most important first; the cap is a backstop
    text = " ".join(sentences)
    return text if count_tokens(text) <= max_tokens else text[: max_tokens * 4]


def finish_summary(raw: str, messages: list[Message], previous_summary: str, new_turns: list[StoredTurn],
                   max_sentences: int, max_tokens: int, max_facts: int = 8) -> str:
    """Clean the LLM's summary, then add the fact guard's line. Empty when the LLM gave
    nothing usable (the caller treats that as a failed summary)."""
    body, _ = split_marker(raw)  # a marker line the LLM copied is rebuilt by the guard
    previous_body, _ = split_marker(previous_summary)
    # What the model was given, minus the previous memory (repeating that is its job).
    given = "\n".join(m["content"] for m in messages).replace(previous_body, "")
    labels = set(LABELS.values()) | {t.speaker for t in new_turns if t.speaker}
    cleaned = clean_summary(body, max_sentences, max_tokens, echo_of=given, labels=labels)
    return guard(cleaned, previous_summary, new_turns, max_facts) if cleaned else ""
