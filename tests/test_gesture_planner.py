"""robot/gestures/planner.py: gestures picked from a sentence's words by the persona's rules."""

from config.loader import DEFAULT_PERSONA, load_persona
from config.schema import GestureRule
from robot.gestures.planner import GesturePlanner
from robot.gestures.sentence import PlannedGesture, Sentence

RULES = [
    GestureRule(gesture="bow", words=["hello", "welcome", "thank*"]),
    GestureRule(gesture="point_right", when="vocabulary"),
    GestureRule(gesture="nod", words=["sure", "of course", "great"]),
]
VOCABULARY = ["Kyoto", "Nara", "Fushimi Inari"]


def plan(text, rules=RULES, vocabulary=VOCABULARY):
    return GesturePlanner(rules, vocabulary).plan(text)


def test_a_greeting_gets_a_bow_at_its_word():
    assert plan("Hello and welcome to our agency!") == (PlannedGesture("bow", 0, 0, "Hello"),)


def test_a_place_gets_a_point_at_the_place_s_word():
    [gesture] = plan("You will love Kyoto in April.")
    assert (gesture.name, gesture.word_index, gesture.word) == ("point_right", 3, "Kyoto")
    assert gesture.char_offset == len("You will love ")
    assert gesture.fraction("You will love Kyoto in April.") == len("You will love ") / len("You will love Kyoto in April.")
    # a name of several words, and one with a possessive ending
    assert plan("The gates of Fushimi  Inari glow.")[0].word_index == 3
    assert plan("Nara's deer bow to visitors.")[0].word == "Nara"


def test_the_first_rule_that_matches_wins_and_one_gesture_per_sentence():
    # rule order, not word order: "thank" (rule 1) wins over "Great" (rule 3) and "Kyoto" (rule 2)
    assert [g.name for g in plan("Great, Kyoto is lovely, thank you.")] == ["bow"]
    assert [g.name for g in plan("Great, Kyoto is lovely.")] == ["point_right"]
    assert [g.name for g in plan("Sure, of course.")] == ["nod"]
    # within a rule, the earliest word of the sentence: "of course" before "great"
    assert plan("It is of course a great plan.")[0].word == "of course"


def test_words_are_whole_words_any_case_with_a_wildcard_ending():
    assert plan("THANKS a lot.")[0].word == "THANKS"
    assert plan("I am thankful.")[0].word == "thankful"
    assert plan("We saw a hellofest.") == ()  # "hello" is no prefix rule
    assert plan("Unsure of the date.") == ()  # "sure" inside another word does not count
    assert plan("Nobody is ensured.") == ()


def test_no_rules_no_match_and_no_text_plan_nothing():
    assert GesturePlanner([]).plan("Hello, welcome to Kyoto!") == ()
    assert GesturePlanner([]).empty
    assert plan("The train leaves at nine.") == ()
    assert plan("") == ()
    # a vocabulary rule with no vocabulary matches nothing
    assert plan("Kyoto!", rules=[GestureRule(gesture="point_right", when="vocabulary")], vocabulary=[]) == ()


def test_an_llm_tag_wins_the_planner_adds_nothing():
    planner = GesturePlanner(RULES, VOCABULARY)
    tagged = Sentence("Welcome to Kyoto!", ("show_map",))
    assert planner.annotate(tagged) is tagged
    untagged = planner.annotate(Sentence("Welcome to Kyoto!"))
    assert untagged.gestures == () and [g.name for g in untagged.planned] == ["bow"]
    assert planner.annotate(Sentence("", ("nod",))).planned == ()


async def test_annotated_closes_the_stream_it_reads():
    closed = []

    async def sentences():
        try:
            yield Sentence("Hello.")
            yield Sentence("Never read.")
        finally:
            closed.append(True)

    stream = GesturePlanner(RULES, VOCABULARY).annotated(sentences())
    first = await anext(stream)
    await stream.aclose()  # the speaker was cancelled: the LLM request must close too
    assert [g.name for g in first.planned] == ["bow"] and closed == [True]


def test_the_travel_persona_gestures_its_sentences():
    persona = load_persona(DEFAULT_PERSONA)
    planner = GesturePlanner(persona.gesture_rules, persona.vocabulary)

    def names(text):
        return [g.name for g in planner.plan(text)]

    assert names(persona.greeting) == ["bow"]
    assert names(persona.apology) == ["bow"]  # an apology is a bow too
    assert names("Thank you for coming.") == ["bow"]
    assert names("Nara is an hour from Kyoto by train.") == ["point_right"]
    assert names("Of course, two adults in April.") == ["nod"]
    assert all(rule.gesture in persona.gestures for rule in persona.gesture_rules)
