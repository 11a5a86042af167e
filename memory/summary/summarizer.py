"""Turning turns into summary prompts, and LLM output into a clean, bounded summary."""

from __future__ import annotations

import logging
import re
from typing import Iterable

from memory.core.base import Message
from memory.core.records import StoredRemark
from memory.core.settings import SpeakerLabels, SummaryPolicy
from memory.core.tokens import count_tokens
from memory.summary.facts import FactGuard, split_marker
from prompts import chat_parts, load_chat_prompt, load_prompt

log = logging.getLogger(__name__)

NO_SUMMARY = "(nothing yet)"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A label the model writes (or copies from the prompt's scaffolding) in front of its answer.
_LEADING_LABEL = re.compile(r"^\s*(\[?(?:updated |previous |rolling )?memory\]?|summary|notes(?: so far)?)\s*:\s*", re.I)


def render_role_prompt(persona_prompt: str, summary: str | None) -> str:
    """The role prompt the reply LLM sees: the persona alone until there is a summary."""
    if not summary:
        return persona_prompt
    return load_prompt("role_prompt").format(persona=persona_prompt.strip(), summary=summary.strip()).strip()


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


class Summarizer:
    """The summary prompts in the persona's wording (labels, role, focus), and the LLM's
    answer made into a bounded summary with the fact guard's line."""

    def __init__(self, policy: SummaryPolicy, max_tokens: int) -> None:
        assert isinstance(policy.labels, SpeakerLabels)  # SummaryPolicy normalizes it
        self.labels = policy.labels
        self.max_sentences = policy.max_summary_sentences
        self.max_tokens = max_tokens
        self.guard = FactGuard(policy.fact_words or (), self.labels.user, policy.guard_facts)
        self._wording = {"role": policy.summary_role, "person": self.labels.user.lower(),
                         "focus": policy.summary_focus, "max_sentences": self.max_sentences}
        self._templates = dict(policy.summary_prompts or {})  # the persona's own; else prompts/

    def names(self, turns: Iterable[StoredRemark]) -> set[str]:
        """The speaker labels of a transcript (ours and the turns' own): not the person's words."""
        return {self.labels.user, self.labels.assistant} | {t.speaker for t in turns if t.speaker}

    def render_turns(self, turns: Iterable[StoredRemark]) -> str:
        return "\n".join(f"{t.speaker or self.labels.of(t.role)}: {t.text}" for t in turns) or "(none)"

    def _chat(self, name: str, previous_summary: str, **fields: object) -> list[Message]:
        fields.update(self._wording, previous_summary=previous_summary or NO_SUMMARY)
        parts = chat_parts(self._templates[name]) if name in self._templates else load_chat_prompt(name)
        return [{"role": role, "content": text.format(**fields)} for role, text in parts]

    def rsum_messages(self, previous_summary: str, turns: list[StoredRemark]) -> list[Message]:
        # Instructions in the system message, data in the user message: small local models
        # echo instructions that come inside the data.
        return self._chat("rsum_update", previous_summary, dialogue=self.render_turns(turns))

    def swin_messages(self, previous_summary: str, context: list[StoredRemark],
                      turns: list[StoredRemark]) -> list[Message]:
        return self._chat("swin_update", previous_summary, context=self.render_turns(context),
                          dialogue=self.render_turns(turns))

    def retry_messages(self, previous_summary: str, turns: list[StoredRemark]) -> list[Message]:
        """The second try: a different, simpler task (notes) for a smaller chunk."""
        return self._chat("summary_retry", previous_summary, dialogue=self.render_turns(turns))

    def finish(self, raw: str, messages: list[Message], previous_summary: str,
               new_turns: list[StoredRemark]) -> str:
        """Clean the LLM's summary, then add the fact guard's line. Empty when the LLM gave
        nothing usable (the fold ladder then tries its next rung, which ends in
        ``with_facts`` over an extractive summary: the guard runs whatever the LLM did)."""
        body, _ = split_marker(raw)  # a marker line the LLM copied is rebuilt by the guard
        previous_body, _ = split_marker(previous_summary)
        # What the model was given, minus the previous memory (repeating that is its job).
        given = "\n".join(m["content"] for m in messages).replace(previous_body, "")
        cleaned = clean_summary(body, self.max_sentences, self.max_tokens, echo_of=given, labels=self.names(new_turns))
        return self.with_facts(cleaned, previous_summary, new_turns) if cleaned else ""

    def with_facts(self, body: str, previous_summary: str, new_turns: list[StoredRemark]) -> str:
        """``body`` with the fact guard's line (the person's statements, old and new)."""
        return self.guard.apply(body, previous_summary, new_turns)
