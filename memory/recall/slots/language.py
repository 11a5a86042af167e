"""The words a slot type needs in one language: what marks a negation or a correction, how
people, months, seasons and currencies are said, and how a value is said back.

Numbers in words are text2num's job and dates dateparser's; these lists are what those
libraries do not know (who travels, seasons, "a grand"). A persona in a language listed here
can use every slot type; in another, `name`, `choice`, `need` and `pattern` (config/schema.py
refuses the others). Adding a language is adding one ``Language`` below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Language:
    code: str  # ISO 639-1, as text2num and dateparser take it
    decimal: str  # the decimal separator of amounts ("2.5k"; German "2,5")
    thousands: str  # the thousands separator of amounts said back
    # Negation and correction: a value right after a negation is corrected away ("not April");
    # a negation followed by one of `not_negations` is none ("no more than $2,000").
    negations: tuple[str, ...]
    not_negations: tuple[str, ...]
    away: tuple[str, ...]  # "instead of Osaka", "skip Nara": the value that follows is dropped
    corrections: tuple[str, ...]  # "actually", "I meant": a cue for a slot that holds a value already
    fillers: tuple[str, ...]  # words a bare answer may have around its value ("about two grand")
    past: tuple[str, ...]  # "last spring", "two years ago": not a plan
    # People (party): nouns of adults and of children, companions (my wife), the speaker,
    # travelling alone, a group's size ("family of", "of us"), and how it is said back.
    adults: tuple[str, ...]
    children: tuple[str, ...]
    people: tuple[str, ...]  # "people", "persons": a head count of unknown ages
    companions: dict[str, int]  # adult companions and how many each word is ("parents": 2)
    child_companions: tuple[str, ...]  # "my son", "our little boy"
    possessives: tuple[str, ...]
    # "his", "her", "their": a list that has the speaker goes on through them ("me, my boyfriend and
    # his parents"); alone they say nothing of who travels ("her mother can't walk far")
    other_possessives: tuple[str, ...]
    # words between a person and the age said after ("our son, he just turned 18", "my niece
    # who's 12"): the age decides adult or child
    age_links: tuple[str, ...]
    only_words: tuple[str, ...]  # "just me and my husband": the list is the whole party
    count_after: tuple[str, ...]  # "we're 4 now": words a head count may end a sentence with
    couple_nouns: tuple[str, ...]  # "we're a retired couple": the noun after an adjective
    self_words: tuple[str, ...]
    with_words: tuple[str, ...]  # "with my wife", "bringing my father": the speaker comes too
    alone: tuple[str, ...]
    alone_after: tuple[str, ...]  # a one-word "alone" counts after these ("travelling alone", not "walk alone")
    couple: tuple[str, ...]
    group_of: tuple[str, ...]  # "a family of 4", "a group of 6"
    of_us: tuple[str, ...]  # "3 of us", "the 2 of us"
    family_with: tuple[str, ...]  # "a family with 2 kids": two parents and the children
    we_are: tuple[str, ...]  # "we are 4", "we're 5"
    ordinal_groups: dict[str, int]  # German "zu dritt"
    # Names: phrases after which a name follows for sure, and those after which only a
    # capitalized word that is no nationality or common word is one ("I'm Ken", "I'm American").
    name_sure: tuple[str, ...]
    name_maybe: tuple[str, ...]
    name_then: tuple[str, ...]  # "Lena here", "Tom speaking": a capitalized word before these
    titles: tuple[str, ...]  # "Mr. Sato": kept with the name
    not_names: tuple[str, ...]
    # Dates: months in the persona's language (said back), seasons, parts of a month or
    # season, and the units of relative dates.
    months: tuple[str, ...]
    ambiguous_months: tuple[str, ...]  # also common words: matched only capitalized ("may")
    seasons: dict[str, str]  # word -> the season said back (fall -> autumn)
    parts: dict[str, str]  # "early", "beginning of" -> early; said back as the value of the pair
    next_words: tuple[str, ...]  # "next", "this", "coming"
    this_words: tuple[str, ...]
    units: dict[str, str]  # "week(s)" -> week; day, week, weekend, month, year
    in_words: tuple[str, ...]  # "in 2 weeks"
    tomorrow: dict[str, int]  # "tomorrow": 1 day ahead
    next_year: tuple[str, ...]  # "April next year"
    range_words: tuple[str, ...]  # "from the 10th to the 17th"
    after_next: tuple[str, ...]  # "the week after next": two of the unit ahead
    # Money: currency words and signs, multipliers, "per person".
    currencies: dict[str, str]  # word or sign -> ISO code
    multipliers: dict[str, int]  # "grand", "k" -> 1000
    per_person: tuple[str, ...]
    per_person_before: tuple[str, ...]  # "we can each spend 800": said before the amount
    # An amount said in a sentence with one of these is a price, a wage or a bill, not what the
    # visitor has to spend ("the tour costs 9,800 yen", "the rent is $1,200")
    price_words: tuple[str, ...]
    money_after: tuple[str, ...]  # words that may follow a bare amount ("3000 in total", "3000 instead")
    between: tuple[tuple[str, str], ...]  # ("between", "and"): a range
    range_to: tuple[str, ...]  # "2000 to 3000"
    # Said back: formats of dates and parties.
    day_format: str  # "{day} {month}"
    words_back: dict[str, str]  # week_of, around, weekend_of, per_person, range
    say_party: Callable[[int, int, int], str]  # (adults, children, people) -> "2 adults, 1 child"
    # The words a speaker says of themselves ("I", "my", "we"): an LLM sentence that says a
    # visitor's line again with them speaks as the visitor (robot/reply/copies.py).
    first_person: tuple[str, ...] = ()
    # "my sister is coming too", "her mum will join us": companions said without the speaker, with a
    # word of coming (``joining``; "join" alone says both) and one of adding, are added to a party
    # already known (memory/recall/slots/party.py); "my wife also loves temples" adds nobody
    adding: tuple[str, ...] = ()
    joining: tuple[str, ...] = ()


def _en_party(adults: int, children: int, people: int) -> str:
    parts = []
    if adults:
        parts.append(f"{adults} adult{'s' if adults != 1 else ''}")
    if children > 0:
        parts.append(f"{children} child{'ren' if children != 1 else ''}")
    elif children == -1:
        parts.append("children")
    if not parts and people:
        parts.append("1 adult" if people == 1 else f"{people} people")
    return ", ".join(parts)


def _de_party(adults: int, children: int, people: int) -> str:
    parts = []
    if adults:
        parts.append("1 Erwachsener" if adults == 1 else f"{adults} Erwachsene")
    if children > 0:
        parts.append("1 Kind" if children == 1 else f"{children} Kinder")
    elif children == -1:
        parts.append("Kinder")
    if not parts and people:
        parts.append("1 Erwachsener" if people == 1 else f"{people} Personen")
    return ", ".join(parts)


_CURRENCY_SIGNS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "￥": "JPY"}
SIGNS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}

EN = Language(
    code="en", decimal=".", thousands=",",
    negations=("not", "no", "never", "can't", "cannot", "can’t", "won't", "don't", "doesn't", "isn't", "aren't",
               "wasn't", "couldn't", "shouldn't", "neither", "nor"),
    not_negations=("more", "less", "later", "earlier", "until", "till", "before", "after", "over", "under",
                   "only", "just", "problem", "worries", "doubt"),
    away=("instead of", "rather than", "skip", "drop", "avoid", "except", "apart from", "other than", "without"),
    corrections=("actually", "sorry", "i meant", "i mean", "make it", "rather", "instead", "correction",
                 "no wait", "let's say", "more like", "change it to", "change that to", "make that"),
    fillers=("about", "around", "roughly", "maybe", "perhaps", "probably", "approximately", "like", "say", "um",
             "uh", "er", "erm", "hmm", "well", "so", "oh", "i", "think", "guess", "ok", "okay", "yes", "yeah",
             "somewhere", "something", "or", "so", "the", "a", "just", "only", "then", "well", "hm", "ah"),
    past=("last", "ago", "previous", "went", "was", "were", "had", "did", "stayed", "visited"),
    adults=("adult", "adults", "grown-up", "grown-ups", "grownup", "grownups"),
    children=("kid", "kids", "child", "children", "baby", "babies", "toddler", "toddlers", "infant", "infants", "ones",
              "teen", "teens", "teenager", "teenagers", "son", "sons", "daughter", "daughters", "boy", "boys",
              "girl", "girls", "grandkid", "grandkids", "grandchild", "grandchildren"),
    people=("people", "persons", "person", "travellers", "travelers", "pax", "guests", "friends"),
    companions={"wife": 1, "husband": 1, "partner": 1, "spouse": 1, "girlfriend": 1, "boyfriend": 1, "fiance": 1,
                "fiancee": 1, "fiancé": 1, "fiancée": 1, "friend": 1, "mother": 1, "father": 1, "mom": 1, "mum": 1,
                "dad": 1, "mother-in-law": 1, "father-in-law": 1, "parents": 2, "in-laws": 2, "sister": 1,
                "brother": 1, "colleague": 1, "coworker": 1, "grandmother": 1, "grandfather": 1, "grandma": 1,
                "grandpa": 1, "grandparents": 2, "aunt": 1, "uncle": 1, "cousin": 1, "niece": 1, "nephew": 1, "boss": 1, "roommate": 1,
                # plurals: two unless a number says how many ("my three sisters")
                "sisters": 2, "brothers": 2, "friends": 2, "colleagues": 2, "coworkers": 2, "cousins": 2,
                "aunts": 2, "uncles": 2, "roommates": 2, "mates": 2, "nieces": 2, "nephews": 2},
    child_companions=("kid", "kids", "child", "children", "son", "sons", "daughter", "daughters", "baby", "boy",
                      "boys", "girl", "girls", "toddler", "grandson", "granddaughter", "grandkids", "grandchildren",
                      "twins", "little one", "ones"),
    possessives=("my", "our"),
    other_possessives=("his", "her", "their"),
    age_links=(",", "he", "she", "they", "who", "who's", "whos", "he's", "hes", "she's", "shes", "they're", "theyre",
               "that", "which", "is", "are", "was", "were", "just", "turned", "turns", "turning", "will", "be",
               "both", "aged", "age", "ages", "now", "only", "about", "nearly", "almost"),
    only_words=("just", "only"),
    count_after=("now", "total", "altogether", "all", "together", "then", "in", "so", "again"),
    couple_nouns=("couple",),
    self_words=("i", "me", "myself"),
    with_words=("with", "bringing", "bring", "taking", "take", "along with", "plus"),
    alone=("alone", "solo", "on my own", "by myself", "just me", "only me", "just myself", "single traveller",
           "single traveler"),
    alone_after=("travelling", "traveling", "travel", "going", "go", "coming", "come", "be", "am", "i'm", "i’m",
                 "here", "visiting", "visit", "flying", "fly", "trip", "it's", "me", "myself", "all", "totally",
                 "completely", "was", "will", "i'll"),
    couple=("a couple", "as a couple"),
    group_of=("family of", "group of", "party of", "team of"),
    of_us=("of us",),
    family_with=("family with",),
    we_are=("we are", "we're", "there are", "there's", "there will be", "we'll be", "we will be"),
    ordinal_groups={"both of us": 2, "the both of us": 2},
    name_sure=("my name is", "my name's", "the name is", "the name's", "name's", "call me", "you can call me",
               "my first name is"),
    name_maybe=("i'm", "i am", "this is", "it's", "im"),
    name_then=("here", "speaking"),
    titles=("mr", "mrs", "ms", "miss", "dr", "mister", "prof"),
    not_names=("american", "british", "english", "canadian", "australian", "german", "french", "italian",
               "spanish", "japanese", "chinese", "korean", "indian", "mexican", "brazilian", "dutch", "swiss",
               "swedish", "irish", "scottish", "welsh", "russian", "polish", "european", "asian", "african",
               "muslim", "jewish", "catholic", "buddhist", "hindu", "vegan", "vegetarian", "sorry", "here", "fine",
               "good", "okay", "ok", "just", "not", "from", "so", "the", "a", "an", "very", "really", "also", "too",
               "still", "new", "back", "ready", "sure", "happy", "glad", "interested", "looking", "going",
               "travelling", "traveling", "thinking", "planning", "wondering", "retired", "married", "single",
               "alone", "it", "that", "this", "what", "there", "on", "in", "at", "for", "with", "and", "or", "but"),
    months=("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
            "November", "December"),
    ambiguous_months=("may", "march", "august"),
    seasons={"spring": "spring", "summer": "summer", "autumn": "autumn", "fall": "autumn", "winter": "winter",
             "springtime": "spring", "summertime": "summer", "wintertime": "winter"},
    parts={"early": "early", "beginning of": "early", "start of": "early", "the beginning of": "early",
           "the start of": "early", "mid": "mid", "mid-": "mid", "middle of": "mid", "the middle of": "mid",
           "late": "late", "end of": "late", "the end of": "late",
           # a week or a half of the month, and "towards" its end
           # (read after text2num: "first" is "1st")
           "1st week of": "early", "the 1st week of": "early", "1st half of": "early",
           "the 1st half of": "early", "2nd week of": "early", "the 2nd week of": "early",
           "3rd week of": "mid", "the 3rd week of": "mid", "2nd half of": "late",
           "the 2nd half of": "late", "last week of": "late", "the last week of": "late",
           "towards the end of": "late", "toward the end of": "late", "around the end of": "late",
           "towards the beginning of": "early", "toward the beginning of": "early"},
    next_words=("next", "coming", "upcoming"),
    this_words=("this",),
    units={"day": "day", "days": "day", "week": "week", "weeks": "week", "weekend": "weekend",
           "month": "month", "months": "month", "year": "year", "years": "year"},
    in_words=("in",),
    tomorrow={"tomorrow": 1, "day after tomorrow": 2, "the day after tomorrow": 2},
    next_year=("next year",),
    range_words=("to", "till", "until", "through", "-", "–"),
    after_next=("after next",),
    currencies={"dollar": "USD", "dollars": "USD", "usd": "USD", "bucks": "USD", "buck": "USD", "yen": "JPY",
                "jpy": "JPY", "euro": "EUR", "euros": "EUR", "eur": "EUR", "pound": "GBP", "pounds": "GBP",
                "quid": "GBP", "gbp": "GBP", **_CURRENCY_SIGNS},
    multipliers={"k": 1000, "grand": 1000, "thousand": 1000, "million": 1_000_000, "hundred": 100},
    per_person=("per person", "each", "a head", "per head", "a person", "apiece", "each of us", "per adult"),
    price_words=("cost", "costs", "costing", "price", "prices", "priced", "fare", "fares", "fee", "fees", "charge",
                 "charges", "ticket", "tickets", "pay", "paid", "pays", "spent", "rent", "salary", "earn", "earns",
                 "earned", "won", "lost", "owe", "owed", "bill", "worth", "sell", "sold", "buy", "bought", "raise",
                 "tip", "loan", "debt", "mortgage", "hour", "month", "year", "week", "night", "expensive", "cheap",
                 "cheaper", "discount", "deposit", "refund", "how much", "what"),
    per_person_before=("we each", "we can each", "we could each", "we'd each", "we will each", "we'll each",
                       "each of us can", "each of us could", "each of us has", "each of us will", "per person"),
    money_after=("instead", "or", "total", "in", "tops", "max", "maximum", "for", "all", "please", "then", "at",
                 "so", "overall", "altogether", "and", "is", "would", "should", "at most", "or so", "but", "if"),
    between=(("between", "and"), ("from", "to")),
    range_to=("to", "-", "–", "or"),
    day_format="{day} {month}",
    words_back={"week_of": "week of {date}", "around": "around {date}", "weekend_of": "weekend of {date}",
                "per_person": "per person", "range": "{a} to {b}"},
    say_party=_en_party,
    first_person=("i", "i'm", "im", "i'd", "i'll", "i've", "me", "my", "mine", "myself", "we", "we're", "we'd",
                  "we'll", "we've", "our", "ours", "us"),
    adding=("too", "as well", "also", "join", "joins", "joining"),
    joining=("join", "joins", "joining", "come", "comes", "coming", "travel", "travels", "travelling", "traveling",
             "along"),
)

DE = Language(
    code="de", decimal=",", thousands=".",
    negations=("nicht", "kein", "keine", "keinen", "nie", "niemals", "weder", "noch nicht"),
    not_negations=("mehr", "weniger", "später", "früher", "vor", "bis", "über", "unter", "nur", "erst"),
    away=("statt", "anstatt", "anstelle von", "lieber nicht", "ohne", "außer", "auslassen", "nicht nach"),
    corrections=("eigentlich", "doch", "ich meinte", "ich meine", "sagen wir", "lieber", "stattdessen",
                 "korrektur", "nein", "moment", "besser"),
    fillers=("etwa", "ungefähr", "circa", "ca", "vielleicht", "so", "um", "die", "ähm", "äh", "hm", "naja",
             "also", "sagen", "wir", "ja", "ok", "okay", "rund", "wahrscheinlich", "eher", "nur", "bloß"),
    past=("letzten", "letztes", "letzte", "letztem", "vergangenen", "vergangenes", "her", "war", "waren",
          "damals"),
    adults=("erwachsene", "erwachsener", "erwachsenen"),
    children=("kind", "kinder", "kindern", "kindes", "baby", "babys", "kleinkind", "kleinkinder", "sohn", "söhne",
              "tochter", "töchter", "jugendliche", "jugendlichen", "enkel", "enkelkind", "enkelkinder"),
    people=("personen", "person", "leute", "reisende", "leuten"),
    companions={"frau": 1, "mann": 1, "partner": 1, "partnerin": 1, "freund": 1, "freundin": 1, "mutter": 1,
                "vater": 1, "mama": 1, "papa": 1, "eltern": 2, "schwester": 1, "bruder": 1, "kollege": 1,
                "kollegin": 1, "oma": 1, "opa": 1, "großmutter": 1, "großvater": 1, "großeltern": 2,
                "schwiegermutter": 1, "schwiegervater": 1, "schwiegereltern": 2, "tante": 1, "onkel": 1,
                "verlobte": 1, "verlobter": 1, "ehefrau": 1, "ehemann": 1, "cousin": 1, "cousine": 1},
    child_companions=("kind", "kinder", "kindern", "sohn", "söhne", "tochter", "töchter", "baby", "kleinen",
                      "enkel", "enkelin", "zwillinge", "jungen", "mädchen"),
    possessives=("mein", "meine", "meinem", "meiner", "meinen", "unser", "unsere", "unserem", "unserer",
                 "unseren"),
    other_possessives=("sein", "seine", "seinem", "seinen", "ihr", "ihre", "ihrem", "ihren"),
    age_links=(",", "er", "sie", "der", "die", "ist", "sind", "wird", "werden", "wurde", "gerade", "schon", "erst",
               "beide", "fast", "etwa", "jetzt"),
    only_words=("nur", "bloß"),
    count_after=("jetzt", "insgesamt", "zusammen", "also", "dann", "nun"),
    couple_nouns=("paar",),
    self_words=("ich", "mich", "mir"),
    with_words=("mit",),
    alone=("allein", "alleine", "solo", "nur ich", "für mich allein"),
    alone_after=("reise", "reisen", "fahre", "fahren", "komme", "kommen", "bin", "ganz", "fliege", "unterwegs",
                 "ich"),
    couple=("als paar", "ein paar sind"),
    group_of=("gruppe von", "familie von", "gruppe aus"),
    of_us=(),
    family_with=("familie mit",),
    we_are=("wir sind", "es sind", "wir werden"),
    ordinal_groups={"zu zweit": 2, "zu dritt": 3, "zu viert": 4, "zu fünft": 5, "zu sechst": 6, "zu siebt": 7,
                    "zu acht": 8},
    name_sure=("ich heiße", "ich heisse", "mein name ist", "mein name lautet", "nennen sie mich", "nenn mich"),
    name_maybe=("ich bin", "hier ist", "hier spricht"),
    name_then=("hier",),
    titles=("herr", "frau", "dr", "prof"),
    not_names=("deutscher", "deutsche", "österreicher", "österreicherin", "schweizer", "schweizerin",
               "amerikaner", "amerikanerin", "engländer", "engländerin", "franzose", "französin",
               "vegetarier", "vegetarierin", "veganer", "veganerin", "rentner", "rentnerin", "student",
               "studentin", "allein", "alleine", "hier", "da", "nicht", "so", "ein", "eine", "einer", "der", "die",
               "das", "auch", "noch", "gerade", "sehr", "mit", "und", "oder", "aber", "zum", "zur", "im", "in",
               "auf", "aus", "von", "unsicher", "interessiert", "müde", "froh", "neu", "zurück"),
    months=("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
            "November", "Dezember"),
    ambiguous_months=(),
    seasons={"frühling": "Frühling", "frühjahr": "Frühling", "sommer": "Sommer", "herbst": "Herbst",
             "winter": "Winter"},
    parts={"anfang": "Anfang", "anfangs": "Anfang", "zu beginn": "Anfang", "mitte": "Mitte", "ende": "Ende",
           "gegen ende": "Ende", "früh im": "Anfang", "spät im": "Ende"},
    next_words=("nächste", "nächsten", "nächstes", "nächster", "kommende", "kommenden", "kommendes"),
    this_words=("diese", "diesen", "dieses", "dieser", "in diesem"),
    units={"tag": "day", "tage": "day", "tagen": "day", "woche": "week", "wochen": "week", "wochenende": "weekend",
           "monat": "month", "monate": "month", "monaten": "month", "jahr": "year", "jahre": "year",
           "jahren": "year"},
    in_words=("in",),
    tomorrow={"morgen": 1, "übermorgen": 2},
    next_year=("nächstes jahr", "im nächsten jahr"),
    range_words=("bis", "-", "–"),
    after_next=(),
    currencies={"euro": "EUR", "eur": "EUR", "dollar": "USD", "usd": "USD", "yen": "JPY", "jpy": "JPY",
                "pfund": "GBP", "franken": "CHF", "chf": "CHF", **_CURRENCY_SIGNS},
    multipliers={"k": 1000, "tausend": 1000, "tsd": 1000, "million": 1_000_000, "millionen": 1_000_000},
    per_person=("pro person", "pro kopf", "je person", "jeweils", "pro erwachsenem", "für jeden"),
    price_words=("kostet", "kosten", "preis", "preise", "gebühr", "ticket", "tickets", "fahrkarte", "bezahlt",
                 "zahlen", "miete", "gehalt", "verdient", "gewonnen", "verloren", "rechnung", "wert", "gekauft",
                 "verkauft", "stunde", "monat", "jahr", "woche", "nacht", "teuer", "billig", "rabatt", "anzahlung",
                 "wie viel", "was"),
    per_person_before=("jeder von uns", "wir jeweils", "pro person", "pro kopf"),
    money_after=("insgesamt", "maximal", "höchstens", "für", "oder", "bitte", "dann", "aus", "ausgeben", "und",
                 "gesamt", "alles", "zusammen", "haben", "sein"),
    between=(("zwischen", "und"), ("von", "bis")),
    range_to=("bis", "-", "–", "oder"),
    day_format="{day}. {month}",
    words_back={"week_of": "Woche vom {date}", "around": "um den {date}", "weekend_of": "Wochenende vom {date}",
                "per_person": "pro Person", "range": "{a} bis {b}"},
    say_party=_de_party,
    first_person=("ich", "mich", "mir", "mein", "meine", "meinem", "meinen", "meiner", "wir", "uns", "unser",
                  "unsere", "unserem", "unseren", "unserer"),
    adding=("auch", "ebenfalls", "noch"),
    joining=("kommt", "kommen", "reist", "reisen", "dabei"),
)

LANGUAGES: dict[str, Language] = {"en": EN, "de": DE}


def language_of(code: str) -> Language | None:
    """The word lists for a persona's language ("de-DE" reads as "de"); None where there are none."""
    return LANGUAGES.get(code.split("-")[0].lower())
