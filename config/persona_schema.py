"""A persona's schema (config/personas/*.yaml): who the robot is, how it talks and remembers,
its visitor profile and its knowledge; validated as the settings are (``config/schema.py``)."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from config.offers_schema import PersonaOffers
from config.strict import LanguageCode, Strict


# The visitor profile's slot types (memory/recall/slots/spec.py SLOT_TYPES) and the languages
# whose word lists the types that read numbers, dates and people need (its LANGUAGE_TYPES and
# memory/recall/slots/language.py LANGUAGES; tests/memory/test_slot_types.py keeps them equal).
SlotType = Literal["money", "date", "count", "party", "name", "choice", "need", "pattern", "duration", "ages"]
SLOT_LANGUAGES = ("en", "de")
LANGUAGE_SLOT_TYPES = ("money", "date", "count", "party", "name", "duration", "ages")

# Names or phrases: a list, or a mapping of the value said back -> other ways to say it
# ({"limited walking": ["can't walk far", "walking stick"]}).
Terms = list[str] | dict[str, list[str] | None]


class ProfileSlot(Strict):
    """One slot of the visitor profile (memory/recall/profile.py, docs/memory.md): its type decides
    what a value is and how it is said back; cue words, lists and periods are the persona's."""

    type: SlotType = Field("pattern", description=(
        "What the slot holds: money (an amount and its currency: \"$2,000\"), date (months, days, seasons, "
        "relative dates, named periods), count (a number of `units`), party (how many and who: \"2 adults, "
        "1 child\"), name, choice (one or many of `choices` and/or the vocabulary), need (one or many of "
        "`words`), duration (the time they have: \"a day\", \"about three hours\"), ages (children's ages: "
        "\"6\", \"4 and 9\"), or pattern (regular expressions, the escape hatch)."))
    label: str | None = Field(None, min_length=1, max_length=40, description=(
        "The slot's name in the prompt, the recap, the console and `robot memory show`, e.g. \"Budget\"; "
        "null: the key, capitalized."))
    cues: list[str] | None = Field(None, description=(
        "Words or phrases one of which must be near a value for it to count (same clause; a trailing * "
        "matches any ending): money's [budget, spend, afford] keep a price the customer repeats (\"the "
        "train costs 1,500 yen?\") out. A money value also counts as the whole answer (\"About two grand.\") "
        "or as a correction of one held (\"Actually 2500.\"). For a choice or need slot, what makes a word said "
        "the visitor's own (interests: [like, love, into]: \"we love temples\", not \"is the temple open?\"). "
        "null: money needs a cue only by those rules; the other types none."))
    choices: Terms = Field([], description=(
        "choice: the names to choose from, a list, or a mapping of each name to other ways to say it "
        "({Kyoto: [Kioto]}); the value is the name as written here."))
    vocabulary: bool = Field(False, description=(
        "choice (and pattern): also the persona's vocabulary names (places, products)."))
    knowledge: bool = Field(False, description=(
        "choice: also the names in the persona's knowledge files (places, tours: docs/knowledge.md)."))
    words: Terms = Field([], description=(
        "need: the words and phrases, a list, or a mapping of the value said back to its wordings "
        "({\"limited walking\": [\"can't walk far\", walking stick]}); a trailing * matches any ending."))
    periods: Terms = Field([], description=(
        "date: the persona's named periods (\"cherry blossom season\", \"Golden Week\"), a list or a mapping "
        "to other wordings."))
    currency: str | None = Field(None, pattern=r"^[A-Z]{3}$", description=(
        "money: the ISO code of an amount said without a currency (\"our budget is 3000\"); null: the "
        "number alone."))
    units: list[str] = Field([], description=(
        "count: what is counted, singular first (\"[night, nights]\"): \"five nights\" is \"5 nights\"."))
    ask: str | None = Field(None, min_length=1, max_length=200, description=(
        "The robot's question for this slot while it is empty (\"When would you like to go?\"): said after "
        "the persona's `noted` line, instead of the LLM's words, when a statement gave the profile something "
        "and this is the first empty slot with a question (in the persona's order) not asked before in this "
        "visit. Each is asked once a visit; never after a question of the customer's. null: never asked."))
    many: bool = Field(False, description=(
        "Collect every value said (places, needs), a value corrected away (\"not Nara\") leaving it; false: "
        "the last one said replaces the earlier (\"actually three adults\")."))
    patterns: list[str] = Field([], description=(
        "pattern: regular expressions (case-insensitive; (?-i:...) for a case-sensitive part) tried on every "
        "customer utterance; the group named value, or the whole match, is the slot's value. A match "
        "right after \"not\" is ignored (\"not April, May\" keeps May)."))

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        from config.patterns import pattern_problem

        for pattern in value:
            if problem := pattern_problem(pattern):
                raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _fields_fit_the_type(self) -> "ProfileSlot":
        if self.type == "choice" and not (self.choices or self.vocabulary or self.knowledge):
            raise ValueError("a choice slot needs choices: [...], vocabulary: true or knowledge: true")
        if self.type == "need" and not self.words:
            raise ValueError("a need slot needs words: [...]")
        if self.type == "count" and not self.units:
            raise ValueError("a count slot needs units: [...] (what is counted, e.g. [night, nights])")
        if self.type == "pattern" and not self.patterns and not self.vocabulary:
            raise ValueError("a pattern slot needs patterns: [...] (or give it a type: money, date, party, ...)")
        if self.patterns and self.type != "pattern":
            raise ValueError(f"patterns are for type: pattern; a {self.type} slot reads its values itself")
        return self


class PersonaMemory(Strict):
    """The persona's memory: how and when the conversation is folded into a summary, and how
    the summaries are worded (docs/memory.md)."""

    strategy: Literal["rsum", "swin", "full"] = Field("rsum", description=(
        "\"rsum\": each update folds the whole pending history into a recursive summary; \"swin\": "
        "sliding windows of exchanges; \"full\": no summaries and nothing on disk, every turn in the "
        "prompt."))
    # Timers have floors: a tiny interval spins the CPU (issue 14); memory/summary/scheduler.py clamps too.
    update_interval_s: float = Field(300.0, ge=1.0, le=86400, description=(  # the paper's timer
        "The timer: seconds between summary updates, each folding the pending history into the summary."))
    update_after_turns: int | None = Field(None, ge=1, le=10000, description=(
        "Also fold after this many pending utterances; null: not by count."))
    update_after_tokens: int | None = Field(None, ge=50, le=131072, description=(
        "Also fold when the pending history passes this many tokens; null: not by size."))
    swin_window: int = Field(4, ge=1, le=100, description="swin: exchanges per window.")
    swin_stride: int = Field(2, ge=1, le=100, description="swin: exchanges the window moves per step; at most swin_window.")
    max_summary_sentences: int = Field(20, ge=1, le=200, description=(
        "Most sentences of a summary: told to the LLM and enforced on its answer."))
    summary_timeout_s: float = Field(120.0, ge=1.0, le=3600, description="Seconds one summary request may take (real time).")
    retry_backoff_s: float = Field(30.0, ge=0.5, le=3600, description="Seconds to wait before retrying a failed summary.")
    min_entity_recall: float = Field(0.5, ge=0, le=1, description=(
        "Quality gate: a summary must keep at least this share of the entities (names, numbers, dates) "
        "of the previous summary, and of the folded turns; 0: off."))
    # Wording of the summaries; None: the neutral default (prompts/).
    labels: dict[Literal["user", "assistant"], str] | None = Field(None, description=(
        "How the two sides are named in summary prompts, e.g. {user: Customer, assistant: Consultant}; "
        "the user label also opens the line of the person's own words. null: User and Assistant."))
    summary_role: str | None = Field(None, min_length=1, description=(
        "Who keeps the memory, article included, e.g. \"a travel consultant\"; null: \"an assistant\"."))
    summary_focus: str | None = Field(None, min_length=1, description=(
        "One sentence: what a summary notes about the person; null: prompts/summary_focus.txt."))
    fact_words: list[str] | None = Field(None, description=(
        "Words or phrases (a trailing * matches any ending) that make the person's sentence a fact kept "
        "verbatim under the summary; null: prompts/fact_words.txt; []: names and money only."))
    summary_prompts: dict[Literal["rsum_update", "swin_update", "summary_retry"], str] = Field({}, description=(
        "The persona's own summary templates, replacing prompts/<name>.txt: `[system]` and `[user]` lines "
        "split the messages; placeholders {role}, {person}, {focus}, {max_sentences}, {previous_summary}, "
        "{dialogue} (and {context} for swin_update). Empty: the neutral defaults."))
    profile: dict[str, ProfileSlot] = Field({}, description=(
        "The visitor profile: the facts this persona needs about the person (name, party, dates, "
        "budget, places, needs), filled from what they say, and shown to the reply model as short "
        "lines when the customer asks about what was said. Keys are slot names; empty: no profile."))

    @field_validator("labels")
    @classmethod
    def _labels_are_names(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and any(not v.strip() or len(v) > 40 or any(c in v for c in ':"\n')
                                     for v in value.values()):
            raise ValueError("a label must be a name of 1 to 40 characters, without ':', '\"' or a line break")
        return value

    @field_validator("summary_prompts")
    @classmethod
    def _templates_fill(cls, value: dict[str, str]) -> dict[str, str]:
        fields = dict.fromkeys(("role", "person", "focus", "max_sentences", "previous_summary", "dialogue",
                                "context"), "x")
        for name, template in value.items():
            if "{dialogue}" not in template:
                raise ValueError(f"{name}: the template must show the conversation: {{dialogue}}")
            try:
                template.format(**fields)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(f"{name}: unknown placeholder or stray brace ({exc}); a literal brace is {{{{")
        return value

    @field_validator("fact_words")
    @classmethod
    def _words_are_words(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not w.strip().rstrip("*") for w in value):
            raise ValueError("a fact word must be a word or phrase (a trailing * matches any ending)")
        return value

    @model_validator(mode="after")
    def _stride_fits(self) -> "PersonaMemory":
        if self.swin_stride > self.swin_window:
            raise ValueError("swin_stride must not exceed swin_window")
        return self


class ForgetRequest(Strict):
    """A visitor asks the robot itself to forget them ("please forget everything I told you"):
    the robot asks to confirm, and a yes deletes all of the visitor's memory, as the
    operator's forget does (robot/dialogue/forget_request.py)."""

    confirm: str = Field("Shall I forget everything you have told me? Please say yes to confirm.", min_length=1,
                         description="Asked when the customer asks to be forgotten.")
    done: str = Field("Done. I have forgotten everything you told me.", min_length=1, description=(
        "Said once the visitor's memory is deleted."))
    kept: str = Field("All right, I will keep it.", min_length=1, description=(
        "Said when the customer answers no; nothing is deleted."))
    words: list[str] | None = Field(None, min_length=1, description=(
        "Phrases that ask to be forgotten (\"forget me\", \"delete my data\"); null: "
        "prompts/forget_words.txt (English)."))
    yes: list[str] | None = Field(None, min_length=1, description=(
        "Phrases that confirm (\"yes\", \"please forget it\"); null: prompts/forget_yes.txt."))
    no: list[str] | None = Field(None, min_length=1, description=(
        "Phrases that decline (\"no\", \"keep it\"); null: prompts/forget_no.txt. Any other answer is a "
        "new turn, and nothing is deleted."))


def template_problem(say: str) -> str | None:
    """Why ``say`` is no row template, or None (a stray brace)."""
    try:
        list(string.Formatter().parse(say))
    except ValueError as exc:
        return f"say: {exc}"
    return None


class KnowledgeFile(Strict):
    """A knowledge file, with the template its rows are said with."""

    path: Path = Field(description="The file, relative to the persona file: .md, .yaml or .csv.")
    say: str | None = Field(None, min_length=1, description=(
        "How a row of this table is said: each {field} is the row's value (\"The {name} costs {price}.\"); "
        "a sentence whose field a row lacks is left out. null: the file's own `say:` (YAML), else each "
        "field as a sentence of its own."))

    @field_validator("say")
    @classmethod
    def _template_parses(cls, value: str | None) -> str | None:
        if value is not None and (problem := template_problem(value)):
            raise ValueError(problem)
        return value


def _file_or_path(value: object) -> object:
    return {"path": value} if isinstance(value, (str, Path)) else value


class PersonaKnowledge(Strict):
    """The shop's own knowledge (docs/knowledge.md): files the robot answers from, what it says
    when they hold no answer, and how it says an entry itself."""

    files: list[Annotated[KnowledgeFile, BeforeValidator(_file_or_path, json_schema_input_type=Path | KnowledgeFile)]] = Field(
        description=(
        "Knowledge files, relative to the persona file: Markdown (an entry per heading), YAML or CSV "
        "(an entry per row); a plain path, or {path, say} with the template a table's rows are said with."))
    answer: str = Field("{entry}", min_length=1, description=(
        "How the robot says an entry's own sentences itself (a confident answer, or a reply the "
        "grounding guard rejected twice): {entry} becomes them."))
    no_answer: str = Field(
        "I'm sorry, I don't have that information. Shall I ask a member of our staff to help you?",
        min_length=1, description=(
            "Said when a visitor asks for something the knowledge does not hold; a `handover` event calls "
            "a member of staff."))
    max_names: int = Field(2, ge=0, le=10, description=(
        "Names of the knowledge given to speech recognition for a turn besides the persona's `vocabulary`: "
        "the visitor's places and the current topic's names it lacks, the most recent ones. Whisper hears "
        "a name it is told far better, but with many it tends to hear the last one named."))
    offers: PersonaOffers | None = Field(None, description=(
        "What the shop sells (docs/consult.md): the tables whose rows are offers, what their fields mean, "
        "and the rules a quote follows; the robot recommends, quotes and keeps the visitor's plan from them. "
        "null: no consultation, questions are answered from the files."))
    # The files' entries, read by config.loader.load_persona (paths resolved against the persona).
    _entries: tuple = PrivateAttr(default=())
    _base: Path | None = PrivateAttr(default=None)  # the persona's folder: what the files' paths are relative to

    @property
    def entries(self) -> tuple:
        """The entries of ``files`` (``config.knowledge.KnowledgeEntry``), as loaded with the persona."""
        return self._entries

    @property
    def base(self) -> Path | None:
        return self._base

    @model_validator(mode="after")
    def _offers_are_knowledge_files(self) -> "PersonaKnowledge":
        named = {f.path for f in self.files}
        for table in self.offers.tables if self.offers is not None else ():
            if table not in named:
                raise ValueError(f"offers.tables: {table} is not one of knowledge.files")
        return self

    @field_validator("answer")
    @classmethod
    def _answer_names_the_entry(cls, value: str) -> str:
        if "{entry}" not in value:
            raise ValueError("must contain {entry}, where the entry's sentences are said")
        return value


class GestureRule(Strict):
    """One rule of the gesture planner (robot/gestures/planner.py, docs/mqtt.md): a sentence
    that matches gets ``gesture``, made as the matching word is said. Rules are tried in
    order; the first that matches wins (one planned gesture per sentence at most), and a
    sentence with an LLM tag gets none."""

    gesture: str = Field(description="A name from the persona's gestures.")
    when: Literal["words", "vocabulary"] = Field("words", description=(
        "words: one of this rule's words is said; vocabulary: a name of the persona's vocabulary is said."))
    words: list[str] = Field([], description=(
        "For when: words. Whole words or phrases, any case; a trailing * matches any ending (thank*)."))

    @model_validator(mode="after")
    def _words_fit_when(self) -> "GestureRule":
        if self.when == "words" and not self.words:
            raise ValueError("a rule with when: words needs words: [...]")
        if self.when == "vocabulary" and self.words:
            raise ValueError("a rule with when: vocabulary takes the persona's vocabulary; leave out words")
        if any(not w.strip().rstrip("*") for w in self.words):
            raise ValueError("a rule's word must be a word or phrase (a trailing * matches any ending)")
        return self


class Persona(Strict):
    """A persona (config/personas/*.yaml): who the robot is, how it talks, which gestures it
    has and how it remembers. Only name and role_prompt are required."""

    name: str = Field(description="The persona's name, as the terminal, the console and the logs show it.")
    role_prompt: str = Field(min_length=1, description=(
        "The system prompt: who the robot is and how it answers. The memory's summary is added under it."))
    greeting: str | None = Field(None, description="Said once when the robot starts; null: no greeting.")
    apology: str = Field(
        "I'm sorry, I could not think of an answer just now. Could you say that again?", description=(
            "Said when the robot heard the visitor but cannot answer now: the LLM fails, or gives no "
            "sentence within llm.give_up_after_s. Not for what it did not hear (not_heard)."))
    not_heard: str = Field(
        "I'm sorry, I didn't catch that. Could you say it again?", description=(
            "Said when the robot could not make out what was said (speech recognition failed); noise "
            "and silence get no answer."))
    filler: str | None = Field("Let me think.", description=(
        "Said while a slow LLM has not started its reply (after llm.filler_after_s); null: silence."))
    language: LanguageCode = Field("en", description=(
        "The customer's language, for speech recognition and the default voice: an ISO 639-1 code, "
        "optionally with a region (\"en\", \"ja\", \"en-US\")."))
    voice: str | None = Field(None, description="An espeak-ng voice id, e.g. \"en-us\"; null: tts.voice.")
    rate: int | None = Field(None, ge=60, le=400, description="Speaking rate in words per minute; null: tts.rate.")
    max_sentences: int = Field(4, ge=1, le=50, description=(
        "Most sentences a reply speaks: a kiosk answers briefly, and the rest is offered (more_offer)."))
    # robot/reply/stream.py cuts the reply; robot/speaking/length.py estimates the seconds.
    max_reply_s: float = Field(8.0, ge=1, le=120, description=(
        "Spoken-length budget of a reply in seconds, estimated at the TTS rate: the role prompt asks for "
        "it, and the reply stops at the last whole sentence inside it."))
    more_offer: str | None = Field("Shall I tell you more?", description=(
        "Said after a reply was cut short, offering the rest; null: no offer, the rest is dropped."))
    more_yes: list[str] | None = Field(None, description=(
        "Phrases that take up the offer (\"yes\", \"sure, please\"); null: prompts/more_yes.txt."))
    recap: str | None = Field(None, description=(
        "Said when the customer asks for a recap of the plan (\"Can you remind me what we planned so "
        "far?\", prompts/recap_words.txt) and the visitor profile holds something: {profile} becomes its "
        "values (\"name Ken; places Kyoto and Nara\"), and the LLM goes on after it. null: the LLM "
        "answers alone."))
    noted: str | None = Field(None, description=(
        "Said when the customer's words give the visitor profile something new (\"We are two adults and "
        "want to go in April.\"): {profile} becomes what they gave (\"travellers 2 adults; when April\"; "
        "a name is not said back), so the visitor hears what was understood and can correct it; then the "
        "question of the first empty profile slot that has one (its `ask`), or else the LLM goes on after "
        "it. Not for a question the shop's knowledge answers. null: the LLM answers alone."))
    welcome_name: str | None = Field(None, description=(
        "Said when the customer gives their name, or a new one (\"Hello, my name is Ken ...\"): {name} becomes "
        "it (\"Nice to meet you, {name}.\"), before the noted line and the question of an empty slot (which "
        "follow it as they follow the noted line). Needs a profile slot of type name. null: a name is not "
        "said back."))
    farewell: str | None = Field(None, description=(
        "Said, the LLM not asked, when the customer's words are a goodbye and nothing else (\"Thank you, "
        "that is all for today.\", prompts/farewell_words.txt; a thank-you alone is none). null: the LLM "
        "answers a goodbye."))
    farewell_words: list[str] | None = Field(None, description=(
        "Phrases that say goodbye (\"that is all\", \"bye\"); null: prompts/farewell_words.txt."))
    forget: ForgetRequest | None = Field(ForgetRequest(), description=(
        "A visitor asks the robot to forget them (docs/memory.md): what it asks and says, and the words "
        "it listens for. null: such a request goes to the LLM like any other utterance."))
    gestures: dict[str, str] = Field({}, description=(
        "The gestures the robot's body can make: name -> description the LLM sees. The LLM marks them "
        "in its reply as [gesture:NAME]."))
    vocabulary: list[str] = Field([], description=(
        "Names to hear right (places, products): they bias speech recognition. Keep it short."))
    state_gestures: dict[Literal["idle", "listening", "thinking", "speaking"], str] = Field({}, description=(
        "A gesture (one of `gestures`) made when the robot enters a state: idle, listening, thinking or "
        "speaking."))
    gesture_rules: list[GestureRule] = Field([], description=(
        "The gesture planner's rules, in order: a sentence without an LLM tag gets the gesture of the "
        "first rule that matches, made as its word is said; none: only the LLM's tags move the body."))
    memory: PersonaMemory = Field(PersonaMemory(), description="How this persona's conversations are summarized.")
    knowledge: PersonaKnowledge | None = Field(None, description=(
        "The shop's own knowledge: files of offers, prices, ways and rules the robot answers from, never "
        "inventing a number or a name (docs/knowledge.md). null: the LLM answers alone."))

    @field_validator("gesture_rules")
    @classmethod
    def _rule_gestures_known(cls, rules: list[GestureRule], info: ValidationInfo) -> list[GestureRule]:
        # gestures and vocabulary come before gesture_rules: validated already (absent if invalid)
        if "gestures" not in info.data or "vocabulary" not in info.data:
            return rules
        known = info.data["gestures"]
        for number, rule in enumerate(rules, start=1):
            if rule.gesture not in known:
                raise ValueError(f"rule {number} names unknown gesture {rule.gesture!r} "
                                 f"(known: {', '.join(known) or 'none'})")
            if rule.when == "vocabulary" and not info.data["vocabulary"]:
                raise ValueError(f"rule {number} matches the vocabulary, but the persona has none")
        return rules

    @field_validator("welcome_name")
    @classmethod
    def _welcome_says_the_name(cls, line: str | None) -> str | None:
        if line is not None and "{name}" not in line:
            raise ValueError("must contain {name}, where the visitor's name is said")
        return line

    @field_validator("recap", "noted")
    @classmethod
    def _recap_names_the_profile(cls, recap: str | None) -> str | None:
        if recap is not None and "{profile}" not in recap:
            raise ValueError("must contain {profile}, where the visitor's profile is said")
        return recap

    @model_validator(mode="after")
    def _state_gestures_known(self) -> "Persona":
        unknown = sorted(set(self.state_gestures.values()) - set(self.gestures))
        if unknown:
            raise ValueError(f"state_gestures name unknown gestures: {', '.join(unknown)}")
        return self

    @model_validator(mode="after")
    def _a_welcome_has_a_name_to_say(self) -> "Persona":
        if self.welcome_name is not None and not any(s.type == "name" for s in self.memory.profile.values()):
            raise ValueError("welcome_name says the visitor's name, and memory.profile has no slot of type name")
        return self

    @model_validator(mode="after")
    def _questions_follow_a_noted_line(self) -> "Persona":
        asking = [name for name, slot in self.memory.profile.items() if slot.ask]
        if asking and self.noted is None:
            raise ValueError(f"memory.profile.{asking[0]}.ask is asked after the persona's noted line, "
                             "and the persona has none: add noted: \"Noted: {profile}.\" or drop the ask")
        return self
