"""`money` slots: an amount with its currency, said back one way ("$2,000", "two thousand
dollars", "two grand" and "2k" are one value).

Number words are digits already (text2num, in ``Said.digits``); price-parser reads each
amount and its sign ("$2,000", "2.000 €"); the language's lists add currency words, "grand"
and "k", ranges ("between 3000 and 4000 dollars", "2 to 3 grand") and "per person" ("800 each",
"we can each spend 800"). An amount is the slot's value with one of the slot's cue words near it
("budget", "spend", "afford"), as the whole answer ("About two grand."), as a correction of a
value already held ("Actually 2500."), or, with a currency or a multiplier, said as a statement of
the visitor's own ("we're going with about 300,000 yen"): a price the customer repeats or asks
about ("the train costs 1,500 yen?"), a wage, a bill or money of the past is none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from price_parser import Price

from memory.recall.slots.language import LANGUAGES, SIGNS, Language
from memory.recall.slots.said import Cues, Found, Said, after_phrase, bare_answer

SMALLEST_BARE = 20  # a number without a currency below this is no amount ("spend 3 days")
_ORDINAL = re.compile(r"\d{1,2}(?:st|nd|rd|th\b|\.\s+[^\W\d_])")


@dataclass(frozen=True)
class Amount:
    start: int
    end: int
    value: Decimal
    currency: str | None
    marked: bool  # a currency or a multiplier was said: it is money whatever follows
    scale: int = 1  # the multiplier said ("3 grand": 1000), for a range that says it once ("2 to 3 grand")
    small: bool = False  # a bare number too small to be money alone ("2"): kept for a range's first end


def _amount_pattern(language: Language) -> re.Pattern[str]:
    return _amount_pattern_of(language.code)


@lru_cache(maxsize=8)
def _amount_pattern_of(code: str) -> re.Pattern[str]:
    language = LANGUAGES[code]
    signs = "".join(re.escape(s) for s in language.currencies if len(s) == 1)
    words = "|".join(re.escape(w) for w in sorted((w for w in language.currencies if len(w) > 1), key=len, reverse=True))
    # text2num leaves "4 thousand" as "4 1000": a power of ten after a number multiplies it
    mults = "|".join([*(re.escape(m) for m in sorted(language.multipliers, key=len, reverse=True)), "1000000", "1000", "100"])
    number = r"\d{1,3}(?:[,.]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d+)?"
    return re.compile(
        rf"(?P<sign>[{signs}])?\s?(?P<num>{number})(?:\s?(?P<mult>{mults})\b)?(?:\s?(?P<word>{words})\b|\s?(?P<sign2>[{signs}]))?"
        rf"|(?P<agrand>\b(?:a|one|ein)\s+(?:grand|riesen)\b)",
        re.IGNORECASE)


_MULT = {"grand": 1000, "k": 1000, "thousand": 1000, "1000": 1000, "million": 1_000_000, "1000000": 1_000_000,
         "hundred": 100, "100": 100}


def halves(text: str) -> str:
    """Fractions and pairs of a multiplier as the number they make, in English: "a grand and a half" and "1 and
    a half grand" (text2num leaves "and a half" alone) are 1.5 k, "1 and a half 1000 euros" is 1500
    euros, "half a 1000000 yen" 500000 yen. A grand stays a marked amount of the slot's currency."""
    def value(n: float, mult: str) -> str:
        mult = mult.lower()
        if mult in ("grand", "k", "thousand"):
            return f"{n:g} k"
        return f"{int(n * _MULT[mult])}"

    text = re.sub(r"\b(?:a|one|1)\s+(grand|k|thousand|million)\s+and\s+a\s+half\b",
                  lambda m: value(1.5, m.group(1)), text, flags=re.IGNORECASE)
    text = re.sub(r"\b(\d+)\s+and\s+a\s+half\s+(grand|k|thousand|1000|million|1000000|hundred|100)\b",
                  lambda m: value(float(m.group(1)) + 0.5, m.group(2)), text, flags=re.IGNORECASE)
    text = re.sub(r"\ba\s+couple(?:\s+of)?\s+(grand|k|thousand|1000|million|1000000|hundred|100)\b",
                  lambda m: value(2, m.group(1)), text, flags=re.IGNORECASE)  # "a couple of thousand"
    return re.sub(r"\bhalf\s+a\s+(grand|thousand|1000|million|1000000)\b",
                  lambda m: value(0.5, m.group(1)), text, flags=re.IGNORECASE)


def _scaled_like(first: Amount, last: Amount) -> Amount:
    """A range's first end said without the multiplier of its last: "2 to 3 grand", "between 2 and
    3000 dollars" (text2num's "two and three thousand") are 2,000 to 3,000."""
    if first.scale > 1 or first.marked or first.value >= 100 or last.value < 1000 or first.value <= 0:
        return first
    scale = last.scale if last.scale > 1 else 10 ** (len(str(int(last.value))) - len(str(int(first.value))))
    while scale > 1 and first.value * scale > last.value:
        scale //= 10
    return replace(first, value=first.value * scale, small=False) if scale > 1 else first


@dataclass(frozen=True)
class MoneyReader:
    language: Language
    cues: Cues
    corrections: Cues
    currency: str | None  # said when the customer names none ("our budget is 3000")

    @classmethod
    def of(cls, language: Language, cues: list[str] | tuple[str, ...] | None, currency: str | None) -> "MoneyReader":
        return cls(language, Cues.of(cues), Cues.of(language.corrections), currency)

    def read(self, said: Said, filled: bool = False) -> list[Found]:
        text = halves(said.digits) if self.language.code == "en" else said.digits
        amounts = [a for m in _amount_pattern(self.language).finditer(text) if (a := self._amount(m, text))]
        found = []
        i = 0
        while i < len(amounts):
            first, last = amounts[i], amounts[i]
            if i + 1 < len(amounts) and self._joined(text, amounts[i], amounts[i + 1]):
                last = amounts[i + 1]
                i += 1
                first = _scaled_like(first, last)
            i += 1
            if first.small or last.small:
                continue  # "spend 3 days": no amount
            if not (first.marked or last.marked or self._bare_ok(text, last.end)):
                continue
            end = last.end
            per = after_phrase(text, end, self.language.per_person)
            end = per if per >= 0 else end
            if per < 0 and self._per_person_before(said, text, first.start):
                per = end
            if not (self._meant(said, text, first.start, end, filled)
                    or ((first.marked or last.marked) and self._stated(said, text, first.start, end))):
                continue
            currency = first.currency or last.currency or self.currency
            value = self.said_back(first.value, currency)
            if last is not first:
                value = self.language.words_back["range"].format(a=value, b=self.said_back(last.value, currency))
            if per >= 0:
                value = f"{value} {self.language.words_back['per_person']}"
            found.append(Found(first.start, value, dropped=said.negated(text, first.start)))
        return found

    def _amount(self, match: re.Match[str], text: str) -> Amount | None:
        lang = self.language
        if match.group("agrand"):  # "a grand", not "a grand idea"
            return Amount(match.start(), match.end(), Decimal(1000), None, True) if self._bare_ok(text, match.end()) else None
        sign = match.group("sign") or match.group("sign2")
        price = Price.fromstring((sign or "") + match.group("num"), decimal_separator=lang.decimal)
        if price.amount is None:
            return None
        try:
            value = Decimal(price.amount)
        except InvalidOperation:
            return None
        mult = (match.group("mult") or "").lower()
        scale = int(mult) if mult.isdigit() else lang.multipliers.get(mult, 1)
        value *= scale
        word = (match.group("word") or "").lower()
        currency = lang.currencies.get(sign or "") or lang.currencies.get(word)
        marked = bool(sign or word or scale >= 1000)
        start = match.start() + (len(match.group(0)) - len(match.group(0).lstrip()))
        if not marked and _ORDINAL.match(text, match.start("num")):
            return None  # "3rd", German "3. Mai" are days
        return Amount(start, match.end(), value, currency, marked, scale, small=not marked and value < SMALLEST_BARE)

    def _joined(self, text: str, a: Amount, b: Amount) -> bool:
        """"3000 to 4000 dollars", "between 3000 and 4000": one range."""
        between = text[a.end:b.start].strip().lower()
        if between in self.language.range_to:
            return True
        before = text[:a.start].lower().split()[-1:]
        return any(before == [opener] and between == closer for opener, closer in self.language.between)

    def _stated(self, said: Said, text: str, start: int, end: int) -> bool:
        """Money said as a statement of the visitor's own ("we're going with about 300,000 yen",
        "we've 2 grand to play with"): its sentence asks nothing, prices nothing and is no past."""
        if not self._bare_ok(text, end) or re.search(r"\b(?:a|an|ein|eine|einen)\s*$", text[:start], re.IGNORECASE):
            return False  # "the 2,000 dollar package", "a 5k run": money that names a thing
        s_start, s_end = said.sentence(text, start)
        sentence = text[s_start:s_end + 1].lower()
        if "?" in sentence or said.text.rstrip().endswith("?"):
            return False
        words = set(re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", sentence))
        lang = self.language
        if words & set(lang.past) or any((p in words) if " " not in p else (p in sentence) for p in lang.price_words):
            return False
        return True

    def _per_person_before(self, said: Said, text: str, start: int) -> bool:
        """"We can each spend about 800 dollars": each of them, said before the amount in its clause."""
        clause = text[said.clause(text, start)[0]:start].lower()
        return any(re.search(rf"\b{re.escape(p)}\b", clause) for p in self.language.per_person_before)

    def _bare_ok(self, text: str, end: int) -> bool:
        """A number without currency is an amount only at the end of its clause or before a
        word that may follow an amount ("3000 in total", "3000 instead")."""
        rest = text[end:].lstrip()
        if not rest or not rest[0].isalnum():
            return True
        return after_phrase(text, end, self.language.money_after + self.language.per_person) >= 0

    def _meant(self, said: Said, text: str, start: int, end: int, filled: bool) -> bool:
        if self.cues.near(said, text, start, end) or bare_answer(said, text, start, end):
            return True
        return filled and self.corrections.near(said, text, start, end)

    def said_back(self, value: Decimal, currency: str | None) -> str:
        lang = self.language
        whole = value == value.to_integral_value()
        number = f"{int(value):,}" if whole else f"{value:,.2f}"
        if lang.thousands != ",":
            number = number.replace(",", "\0").replace(".", lang.decimal).replace("\0", lang.thousands)
        sign = SIGNS.get(currency or "")
        if currency is None:
            return number
        if sign is None:
            return f"{number} {currency}"
        return f"{sign}{number}" if lang.code == "en" else f"{number} {sign}"
