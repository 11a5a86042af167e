"""`ages` slots: how old the visitor's children are ("our son is 6", "a 6-year-old", "kids
aged 4 and 9", "the twins are 3", "with a baby"), said back as the ages in order ("6", "4 and
9", "baby and 5"), and read back by ``ages_of`` (the quote: under the shop's free age, a child
goes free; an offer's minimum age).

Number words are digits already (text2num). An age counts only next to a child or an age
word: "6 years old", "aged 6", "a 6-year-old", "my son is 6"; "6 of us" and "6 pounds" are none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.recall.slots.said import Found, Said

_CHILD = {
    "en": r"(?:son|sons|daughter|daughters|kid|kids|child|children|boy|boys|girl|girls|twins|little one|youngest|"
          r"oldest|eldest|he|she|they|toddler|grandson|granddaughter)",
    "de": r"(?:sohn|söhne|tochter|töchter|kind|kinder|junge|mädchen|zwillinge|er|sie)",
}
_IS = {"en": r"(?:is|are|'s|’s|was|turned|turns|just turned|will be)", "de": r"(?:ist|sind|wird|werden)"}
_OLD = {"en": r"(?:years?\s+old|year-olds?|yrs?\s+old|-year-olds?|years)", "de": r"(?:jahre\s+alt|jahre|jährige[rn]?|-jährige[rn]?)"}
_AGED = {"en": r"(?:aged|ages|age)", "de": r"(?:im alter von|alter)"}
_BABY = {"en": r"\b(?:baby|babies|infant|newborn)\b", "de": r"\b(?:baby|babys|säugling)\b"}
MOST = 17  # an age above this is no child's


@dataclass(frozen=True)
class AgesReader:
    code: str

    @classmethod
    def of(cls, code: str) -> "AgesReader":
        return cls(code if code in _CHILD else "en")

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.digits_lower
        ages: list[tuple[int, str]] = []
        number_list = r"(\d{1,2}(?:\s*(?:,|and|&|und)\s*\d{1,2})*)"
        patterns = (
            rf"\b{number_list}\s*{_OLD[self.code]}",                       # "6 and 9 years old", "a 6-year-old"
            rf"\b{_AGED[self.code]}\s+{number_list}\b",                   # "kids aged 4 and 9"
            rf"\b{_CHILD[self.code]}\s+{_IS[self.code]}\s+(?:only\s+|just\s+|nearly\s+|almost\s+)?{number_list}\b(?!\s*(?:of|pounds|yen|euros|dollars|%|people|hours|minutes|days))",
        )
        taken: set[int] = set()
        for pattern in patterns:
            for m in re.finditer(pattern, text):
                if m.start(1) in taken:
                    continue
                taken.add(m.start(1))
                numbers = [int(n) for n in re.findall(r"\d{1,2}", m.group(1))]
                if numbers and all(n <= MOST for n in numbers):
                    ages += [(m.start(1) + i, str(n)) for i, n in enumerate(numbers)]
        ages += [(m.start(), "baby") for m in re.finditer(_BABY[self.code], text)]
        if not ages:
            return []
        ages.sort()
        values = [v for _, v in ages]
        at = ages[0][0]
        return [Found(at, _joined(values), dropped=said.negated(text, at))]


def _joined(values: list[str]) -> str:
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"


def ages_of(value: str) -> list[int]:
    """An ages slot's value ("4 and 9", "baby and 5") as ages in years (a baby is 0)."""
    return [0 if part == "baby" else int(part) for part in re.findall(r"\d{1,2}|baby", value.lower())]
