"""Memory's own settings, as plain frozen objects (memory never reads configuration files).

The application builds them from its validated configuration in one place
(``robot/app/runtime.py: _open_memory``); field names match the persona YAML's ``memory:``
keys and the settings YAML's ``memory:`` keys, so that is one ``**model_dump()`` each.
A wording field left ``None`` takes the neutral default (``prompts/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from prompts import load_prompt, load_word_list


@dataclass(frozen=True)
class SpeakerLabels:
    """How the two sides are named in summary prompts: ``User: ...`` / ``Assistant: ...``."""

    user: str = "User"
    assistant: str = "Assistant"

    def of(self, role: str) -> str:
        return self.user if role == "user" else self.assistant


@dataclass(frozen=True)
class SummaryPolicy:
    """When and how the history is folded into the summary (persona YAML, ``memory:``)."""

    strategy: str = "rsum"  # rsum, swin, or full (no summaries: FullHistoryMemory)
    update_interval_s: float = 300.0  # the timer
    update_after_turns: int | None = None  # also fold after N pending utterances
    update_after_tokens: int | None = None  # or when the pending history passes T tokens
    swin_window: int = 4  # exchanges per window (swin)
    swin_stride: int = 2
    max_summary_sentences: int = 20
    summary_timeout_s: float = 120.0  # one LLM call, real time
    retry_backoff_s: float = 30.0
    guard_facts: int = 8  # the person's statements kept verbatim (memory/summary/facts.py); 0: off
    # The quality gate (memory/summary/entities.py): share of the names, numbers and dates of the
    # previous summary + folded turns an LLM summary must keep to be accepted; 0: off.
    min_entity_recall: float = 0.5
    # Wording (None: the neutral default).
    labels: SpeakerLabels | Mapping[str, str] | None = None
    summary_role: str | None = None  # who keeps the memory, article included: "a travel consultant"
    summary_focus: str | None = None  # one sentence: what to note about the person
    fact_words: Iterable[str] | None = None  # words that make the person's sentence a kept fact
    # The persona's own summary templates (rsum_update, swin_update, summary_retry), in the
    # format and with the placeholders of prompts/<name>.txt; one not given: the default.
    summary_prompts: Mapping[str, str] | None = None
    # The visitor profile (memory/recall/profile.py ``make_slots``): slot name -> {type, label, many, cues, choices, ...}
    # (memory/recall/slots/spec.py); ``vocabulary`` is the persona's list of names a
    # ``vocabulary: true`` slot collects; ``language`` the persona's (what the typed slots read);
    # ``knowledge_names`` the names of the shop's knowledge entries, for choice slots.
    profile: Mapping[str, Mapping[str, Any]] | None = None
    vocabulary: Iterable[str] = ()
    language: str = "en"
    knowledge_names: Iterable[str] = ()

    def __post_init__(self) -> None:
        # Normalize, so every reader sees concrete values (and YAML's dicts and lists work).
        labels = self.labels
        if labels is None:
            labels = SpeakerLabels()
        elif not isinstance(labels, SpeakerLabels):
            labels = SpeakerLabels(**dict(labels))
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "summary_role", self.summary_role or "an assistant")
        object.__setattr__(self, "summary_focus", (self.summary_focus or load_prompt("summary_focus")).strip())
        words = load_word_list("fact_words") if self.fact_words is None else self.fact_words
        object.__setattr__(self, "fact_words", tuple(words))
        if self.swin_stride > self.swin_window:
            raise ValueError("swin_stride must not exceed swin_window")
        object.__setattr__(self, "vocabulary", tuple(self.vocabulary))
        object.__setattr__(self, "knowledge_names", tuple(self.knowledge_names))


@dataclass(frozen=True)
class LlmLimits:
    """What the summarizing model can take, in its own tokens: a summary request (prompt +
    answer) must fit its context window, so a long backlog is folded in chunks."""

    context_tokens: int = 2048  # the model's context window (per request)
    answer_tokens: int = 400  # room kept for the summary it writes


@dataclass(frozen=True)
class StoreSettings:
    """Where a deployment keeps memory and how big a prompt may be (settings YAML, ``memory:``)."""

    db_path: Path | str = Path("var/memory.sqlite3")
    store: str | None = None  # a URL (sqlite:///..., postgresql://...); None: the SQLite file at db_path
    user: str = "default"  # the memory of a single-user tool (replays, benches); kiosks use visitors
    token_budget: int = 1500  # prompt tokens the memory aims to stay under
    retrieval_tokens: int = 300  # room for archived exchanges in each reply's prompt; 0: none
    retrieval_min_score: float = 1.0  # BM25 score an exchange needs to be shown
    profile_llm: bool = False  # ask the LLM for the profile slots the persona's patterns miss
    retention_days: float = 90.0  # a known visitor's records are deleted this long after their last visit
    anonymous_retention_days: float = 0.0  # an anonymous visitor's: 0 = not kept after the session
