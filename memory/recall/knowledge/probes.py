"""What the robot will miss in a shop's files, found before a visitor does (``robot knowledge check``).

Each sentence of each entry is asked about by a probe question made by rule from what the
sentence states, in other words than its own: its kind of fact asked the way visitors ask
("How much is ...?", "When does ... open?", "How long does ... take?", "Where is ...?"), about the
entry by its name, or for a sentence of no such kind, about its rarest word. A probe that does
not find its sentence (another entry answers, or nothing) is a detail no question reaches. The
check also warns of:
- a sentence that names its subject only by a pronoun ("It opens at 7."): said alone as an answer,
  the visitor hears "it" without knowing what;
- two entries that shadow each other: one's name is the other's too, or a probe of one finds the
  other's sentence;
- a long entry (more than ``LONG`` sentences): its details are found, but said in its order, and
  split entries are easier to keep right.
Every warning names the file and the line.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory.recall.knowledge.values import holds

if TYPE_CHECKING:
    from memory.recall.knowledge.search import KnowledgeIndex

LONG = 6
_PRONOUN_FIRST = re.compile(r"^\W*(?:it|its|they|their|them|this|these|those|she|he|there)\b", re.IGNORECASE)
_ASK = {"price": "How much is the {name}?", "time": "When does the {name} open?",
        "duration": "How long does the {name} take?", "place": "Where is the {name}?",
        "frequency": "How often does the {name} run?"}


@dataclass(frozen=True)
class Warning:
    where: str  # "places.md:24"
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass(frozen=True)
class Probe:
    entry: int
    sentence: int
    question: str
    found: bool  # the probe found this sentence
    found_instead: str = ""  # the entry it found instead


def probes(index: "KnowledgeIndex") -> list[Probe]:
    rare = _rarity(index)
    out = []
    for i, e in enumerate(index.entries):
        for j, sentence in enumerate(e.sentences):
            question = _probe_of(e.title, sentence, index, i, j, rare)
            finding = index.search(question)
            best = finding.best
            found = best is not None and best.index == i and (best.sentence == j or not finding.answered and
                                                               not finding.partial)
            if best is not None and best.index == i and finding.answered:
                found = best.sentence == j or holds(e.sentences[best.sentence]) == holds(sentence)
            out.append(Probe(i, j, question, found, "" if best is None or best.index == i else best.entry.title))
    return out


def warnings(index: "KnowledgeIndex") -> list[Warning]:
    out: list[Warning] = []
    entries = index.entries
    for i, e in enumerate(entries):
        where = _where(e, 0)
        if len(e.sentences) > LONG:
            out.append(Warning(where, f"{e.title!r} has {len(e.sentences)} sentences: consider splitting it"))
        names = {n.lower() for n in (e.title, *e.aliases)}
        for j, sentence in enumerate(e.sentences):
            if _PRONOUN_FIRST.match(sentence) and not any(n in sentence.lower() for n in names):
                out.append(Warning(_where(e, j), f"{sentence[:60]!r} names its subject only by a pronoun: "
                                                 f"said alone it does not say what ({e.title!r})"))
    owners: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        for n in {n.lower() for n in (e.title, *e.aliases)}:
            owners.setdefault(n, []).append(i)
    for name, those in owners.items():
        if len(those) > 1:
            a, b = entries[those[0]], entries[those[1]]
            out.append(Warning(_where(a, 0), f"{a.title!r} and {b.title!r} ({_where(b, 0)}) share the name "
                                             f"{name!r}: a visitor who says it gets one of them"))
    shadowed: Counter[tuple[int, str]] = Counter()
    for p in probes(index):
        e = entries[p.entry]
        if not p.found:
            why = f"found {p.found_instead!r} instead" if p.found_instead else "found nothing"
            out.append(Warning(_where(e, p.sentence), f"no question reaches {e.sentences[p.sentence][:60]!r} "
                                                      f"(asked {p.question!r}: {why})"))
            if p.found_instead:
                shadowed[(p.entry, p.found_instead)] += 1
    for (i, other), n in shadowed.items():
        if n >= 2:
            out.append(Warning(_where(entries[i], 0), f"{entries[i].title!r} is shadowed by {other!r}: {n} of its "
                                                      "sentences are found there instead"))
    return out


def _probe_of(title: str, sentence: str, index: "KnowledgeIndex", i: int, j: int, rare: Counter[str]) -> str:
    kinds = index.reader.kinds(i, j)
    for kind in ("price", "duration", "time", "frequency", "place"):
        if kind in kinds:
            return _ASK[kind].format(name=title)
    words = [w for w in re.findall(r"[a-z]{4,}", sentence.lower()) if w not in title.lower()]
    if not words:
        return f"Tell me about the {title}."
    word = min(words, key=lambda w: rare[w])
    return f"What about the {word} at the {title}?"


def _rarity(index: "KnowledgeIndex") -> Counter[str]:
    return Counter(w for e in index.entries for s in e.sentences for w in set(re.findall(r"[a-z]{4,}", s.lower())))


def _where(entry: object, sentence: int) -> str:
    line_of = getattr(entry, "line_of", None)
    return line_of(sentence) if line_of is not None else getattr(entry, "source", "")
