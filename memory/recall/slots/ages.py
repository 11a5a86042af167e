"""`ages` slots: how old the visitor's children are ("our son is 6", "a 6-year-old", "kids aged 4 and
9", "they're seven and three", "my two boys, six and nine", "the twins, they're nine", "with a
baby"), said back youngest first ("6", "3 and 7", "9 and 9", "baby and 5"), and read back by
``ages_of`` (the quote: under the shop's free age a child goes free; an offer's minimum age).

Number words are digits already (text2num). An age counts only next to a child or an age word:
"6 years old", "aged 6", "a 6-year-old", "my son is 6", "they're 6 and 9", a list right after the
children it is about; "6 of us", "6 pounds", "6 hours" are none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.recall.slots.said import Found, Said

_CHILD = {
    "en": r"(?:son|sons|daughter|daughters|kid|kids|child|children|boy|boys|girl|girls|twins|little ones?|youngest|"
          r"oldest|eldest|toddler|grandson|granddaughter|niece|nephew|he|she|they|it)",
    "de": r"(?:sohn|söhne|tochter|töchter|kind|kinder|junge|mädchen|zwillinge|er|sie)",
}
_IS = {"en": r"(?:\s+is|\s+are|'s|’s|'re|’re|\s+was|\s+turned|\s+turns|\s+just turned|\s+will be)",
       "de": r"(?:\s+ist|\s+sind|\s+wird|\s+werden)"}
_OLD = {"en": r"(?:\s*years?\s+old|\s*year-olds?|\s*yrs?\s+old|-year-olds?|\s+years)",
        "de": r"(?:\s*jahre\s+alt|\s*jahre|\s*jährige[rn]?|-jährige[rn]?)"}
_AGED = {"en": r"(?:aged|ages|age)", "de": r"(?:im alter von|alter)"}
_BABY = {"en": r"\b(?:baby|babies|infant|newborn)\b", "de": r"\b(?:baby|babys|säugling)\b"}
_TWINS = {"en": r"\btwins\b", "de": r"\bzwillinge\b"}
# what a number counts when it is no age: "6 of us", "it's 2 groups" (a plural noun after it)
_NOT_AGE = (r"(?!\s*(?:of|pounds|yen|euros|dollars|%|people|persons|hours?|minutes?|days?|nights?|adults?|o'clock|:))"
            r"(?!\s+(?!years\b|yrs\b|as\b|is\b|was\b|this\b|plus\b|yes\b)[a-z]*s\b)")
MOST = 17  # an age above this is no child's


@dataclass(frozen=True)
class AgesReader:
    code: str

    @classmethod
    def of(cls, code: str) -> "AgesReader":
        return cls(code if code in _CHILD else "en")

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = said.digits_lower
        c = self.code
        number_list = r"(\d{1,2}(?:\s*(?:,|and|&|und)\s*\d{1,2})*)"
        patterns = (
            rf"\b{number_list}{_OLD[c]}",                                               # "6 and 9 years old"
            rf"\b{_AGED[c]}\s+{number_list}\b",                                          # "kids aged 4 and 9"
            rf"\b{_CHILD[c]}{_IS[c]}\s+(?:only\s+|just\s+|nearly\s+|almost\s+|about\s+)?(?:turned\s+)?{number_list}\b{_NOT_AGE}",
            rf"\b(?:\d+\s+)?(?:(?:grand)?(?:kids|children|sons|daughters)|boys|girls|little ones|twins)\s*,\s*{number_list}\b{_NOT_AGE}",
        )
        ages: list[tuple[int, int]] = []
        taken: set[int] = set()
        for pattern in patterns:
            for m in re.finditer(pattern, text):
                if m.start(1) in taken:
                    continue
                taken.add(m.start(1))
                numbers = [int(n) for n in re.findall(r"\d{1,2}", m.group(1))]
                if numbers and all(n <= MOST for n in numbers):
                    ages += [(m.start(1) + i, n) for i, n in enumerate(numbers)]
        if ages and len({n for _, n in ages}) == 1 and len(ages) == 1 and re.search(_TWINS[c], text):
            ages.append((ages[0][0] + 1, ages[0][1]))  # "the twins, they're nine": two of nine
        if ages:
            at = min(a for a, _ in ages)
            return [Found(at, _joined(sorted(str(n) for _, n in ages)), dropped=said.negated(text, at))]
        babies = [m.start() for m in re.finditer(_BABY[c], text)]
        # "a high chair for the baby" once the ages are known is no new age
        return [Found(babies[0], "baby")] if babies and not filled else []


def _joined(values: list[str]) -> str:
    values = sorted(values, key=int)
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"


def ages_of(value: str) -> list[int]:
    """An ages slot's value ("4 and 9", "baby and 5") as ages in years (a baby is 0)."""
    return [0 if part == "baby" else int(part) for part in re.findall(r"\d{1,2}|baby", value.lower())]
