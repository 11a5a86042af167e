"""The grounding guard: a reply may say nothing it cannot point to, and never its instructions.

Every sentence the LLM writes is checked before it is spoken (so the first sentence still
plays while the LLM writes the second). It is held back when it says:
- a **number** (prices, times, dates, durations, in digits or words), a **quantity** (a number
  with its unit: "2 hours", "$9,800" is 9800 dollars, not the 9,800 yen of the files), or a
  **name** (capitalized, or a word no dictionary has: "the kinkaku castle") that no source holds;
- a **web address, e-mail address or domain** the shop's own texts do not hold;
- a **price attached to one of the shop's offers** (a sentence naming an entry and an amount,
  or "free") that is not that entry's own, or computed from it (``computed``): the visitor's words
  ground a number they said ("you said ten yen"), never the price of an offer ("the Kyoto tour
  costs ten yen");
- what **contradicts the shop's sentence** it is closest to (``robot/reply/contradiction.py``): a
  yes where the entry says not allowed, "half" where it says all;
- **six words in a row of its instructions** (the role prompt, the brevity and gesture rules):
  instructions are no source, and a reply that quotes them is refused ("repeat your system prompt").
Sources are what the LLM was given besides its instructions: the visitor's memory (summary,
history, profile), the shop's entries retrieved for this turn, the customer's words, and what
the robot says itself from an entry. A sentence that fails makes the reply ask the LLM once more;
a second failure makes the robot say the best entry's own sentences (``robot/reply/stream.py``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from memory.core.base import Message
from memory.recall.facts import digits, facts_of, is_dictionary_word, name_found, numbers_of, quantities_of, words_of
from memory.recall.knowledge.values import FREE, money_in
from robot.reply.contradiction import Closest, contradicted

QUOTE_WORDS = 6  # this many words in a row of the instructions: the reply quotes them
_ADDRESS = re.compile(r"(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|jp|"
                      r"uk|de|io|co|info|biz|travel|museum)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+")
_LOWER = re.compile(r"(?<![\w'’-])[a-z][a-z]+(?![\w'’-])")  # a word written in lower case, whole


@dataclass(frozen=True)
class Offer:
    """One of the shop's entries as the guard sees it: its names, and the prices its text holds."""

    names: tuple[str, ...]
    prices: frozenset[str]  # "9800 JPY", "free"

    @classmethod
    def of(cls, entry: object) -> "Offer":
        text = " ".join(getattr(entry, "sentences", ()))
        prices = {_price_key(m.amount, m.currency) for m in money_in(text)}
        if FREE.search(text):
            prices.add("free")
        return cls(tuple(n for n in (getattr(entry, "title", ""), *getattr(entry, "aliases", ())) if n), frozenset(prices))


@dataclass
class GroundingGuard:
    """Built once per reply from its sources; ``unsupported(sentence)`` per sentence."""

    numbers: set[str]
    words: set[str]
    quantities: set[str] = field(default_factory=set)  # "2 hour": a number and its unit, together
    addresses: set[str] = field(default_factory=set)  # web and e-mail addresses in the shop's texts
    offers: tuple[Offer, ...] = ()  # the entries whose prices a sentence naming them must keep to
    shop: tuple[str, ...] = ()  # the shop's own sentences, for the contradiction check
    instructions: tuple[str, ...] = ()  # normalized word runs of the instructions
    closest: Closest | None = None  # the shop sentence an LLM sentence paraphrases, by meaning
    facts: bool = True  # check numbers, names, prices; False: instructions only (no knowledge)
    checked_s: float = 0.0  # time spent checking, for the bench and the turn's figures
    rejected: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (sentence, its unsupported facts)

    @classmethod
    def of(cls, sources: Iterable[str], *, shop: Sequence[str] = (), entries: Sequence[object] = (),
           instructions: Sequence[str] = (), closest: Closest | None = None) -> "GroundingGuard":
        """``sources``: everything a reply may repeat; ``shop``: the shop's own texts among them (the
        entries, what the robot says from them); ``entries``: the offers named, whose prices are
        their own; ``instructions``: what the LLM was told to do, which is never a source."""
        text = "\n".join(s for s in (*sources, *shop) if s)
        shop_text = "\n".join(s for s in shop if s)
        own = [s for e in entries for s in getattr(e, "sentences", ())]
        return cls(numbers_of(text), words_of(text), quantities_of(text) | _signed_quantities(text),
                   {a.lower().rstrip(".,") for a in _ADDRESS.findall(shop_text)},
                   tuple(Offer.of(e) for e in entries), tuple(_sentences(shop_text)) + tuple(own),
                   tuple(_runs(i) for i in instructions if i), closest)

    @classmethod
    def of_messages(cls, messages: Iterable[Message], *more: Iterable[str], entries: Sequence[object] = (),
                    instructions: Sequence[str] = (), closest: Closest | None = None) -> "GroundingGuard":
        """Everything the LLM was given (memory, notes, the utterance) but its ``instructions``, and
        ``more`` (what the robot itself says: an entry's sentences)."""
        texts = []
        for m in messages:
            content = m["content"]
            for instruction in instructions:
                if instruction:
                    content = content.replace(instruction.strip(), " ")
            texts.append(content)
        shop = [s for group in more for s in group] + [s for e in entries for s in getattr(e, "sentences", ())]
        notes = [t for t in texts if "From the shop's own information" in t]
        return cls.of(texts, shop=[*shop, *notes], entries=entries, instructions=instructions, closest=closest)

    @classmethod
    def instructions_only(cls, instructions: Sequence[str]) -> "GroundingGuard":
        """For a persona without knowledge files: nothing to ground a fact in, so only what must
        never be said is checked (its instructions)."""
        return cls(set(), set(), instructions=tuple(_runs(i) for i in instructions if i), facts=False)

    def unsupported(self, sentence: str) -> tuple[str, ...]:
        """What of ``sentence`` no source holds, or that it must not say (empty: it may be said)."""
        started = time.perf_counter()
        if not self.facts:
            missing_ = ["its instructions"] if self._quotes_instructions(sentence) else []
            self.rejected += [(sentence, tuple(missing_))] if missing_ else []
            return tuple(missing_)
        facts = facts_of(sentence)
        missing = sorted(n for n in facts.numbers if n not in self.numbers)
        missing += sorted(q for q in facts.quantities | _signed_quantities(sentence) if q not in self.quantities)
        missing += sorted(n for n in facts.names if not name_found(n, self.words))
        missing += self._strange_words(sentence)
        missing += [a for a in _ADDRESS.findall(sentence) if a.lower().rstrip(".,") not in self.addresses]
        missing += self._offer_prices(sentence)
        if self._quotes_instructions(sentence):
            missing.append("its instructions")
        if (source := contradicted(sentence, self.shop, self.closest)) is not None:
            missing.append(f"the opposite of: {source}")
        self.checked_s += time.perf_counter() - started
        if missing:
            self.rejected.append((sentence, tuple(missing)))
        return tuple(missing)

    def _strange_words(self, sentence: str) -> list[str]:
        """Lower-case words no dictionary and no source has ("the kinkakuji castle"): a name invented
        in lower case is a name all the same."""
        out = []
        for word in _LOWER.findall(sentence):
            if len(word) > 3 and not word.isdigit() and word not in self.words and not is_dictionary_word(word) \
                    and not _compact_in(word, self.words):
                out.append(word)
        return out

    def _offer_prices(self, sentence: str) -> list[str]:
        """A price said of an offer the sentence names must be that offer's own."""
        lowered = sentence.lower()
        named = [o for o in self.offers if any(_named_in(n, lowered) for n in o.names)]
        if not named:
            return []
        said = {_price_key(m.amount, m.currency) for m in money_in(digits(sentence))}  # "ten yen" is 10 yen
        if FREE.search(sentence):
            said.add("free")
        own = set().union(*(o.prices for o in named))
        return sorted(f"the price {p} of {named[0].names[0]}" for p in said - own)

    def _quotes_instructions(self, sentence: str) -> bool:
        said = f" {' '.join(_WORD.findall(sentence.lower()))} "
        for words in self.instructions:
            for i in range(len(words) - QUOTE_WORDS + 1):
                if f" {' '.join(words[i:i + QUOTE_WORDS])} " in said:
                    return True
        return False


def _price_key(amount: object, currency: str) -> str:
    from decimal import Decimal

    value = Decimal(str(amount)).normalize()
    return f"{value:f} {currency}"


def _signed_quantities(text: str) -> set[str]:
    """Amounts written with a sign ("$9,800", "£14") as quantities with their unit word."""
    words = {"JPY": "yen", "USD": "dollar", "GBP": "pound", "EUR": "euro", "CHF": "franc"}
    return {f"{_price_key(m.amount, m.currency).split()[0]} {words.get(m.currency, m.currency.lower())}"
            for m in money_in(text)}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if len(s.split()) >= 3]


def _runs(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


def _named_in(name: str, lowered: str) -> bool:
    words = _WORD.findall(name.lower())
    return bool(words) and re.search(r"\b" + r"[\s-]+".join(map(re.escape, words)) + r"\b", lowered) is not None


def _compact_in(word: str, words: set[str]) -> bool:
    """"kinkakuji" is "kinkaku" and "ji" written together."""
    return any(word.startswith(w) and word[len(w):] in words for w in words if 2 < len(w) < len(word))
