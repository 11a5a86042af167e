"""robot/reply/stream.py: LLM text deltas -> sentences with gestures; the apology when the LLM fails."""

import asyncio
import json

import pytest

from robot.gestures.tags import gesture_instructions
from robot.llm.client import LLMError
from robot.reply.sentences import SentenceSplitter, split_text, to_sentence
from robot.reply.stream import Reply, ReplyRules

VOCAB = {"bow": "a bow", "show_map": "show a map", "nod": "a nod"}
RULES = ReplyRules(gestures=VOCAB, max_sentences=3, apology="Sorry, say that again?")


def feed_all(pieces):
    splitter = SentenceSplitter()
    out = []
    for piece in pieces:
        out += splitter.feed(piece)
    return out, splitter.flush()


def test_sentences_come_out_as_soon_as_they_end():
    splitter = SentenceSplitter()
    assert splitter.feed("Hello there") == []
    assert splitter.feed("! How can I") == ["Hello there!"]
    assert splitter.feed(" help? Kyoto") == ["How can I help?"]
    assert splitter.flush() == ["Kyoto"]
    assert splitter.flush() == []


@pytest.mark.parametrize("text", [
    "Mr. Tanaka will meet you at the station.",
    "St. Paul's is worth a visit.",
    "The J.R. Pass covers the Shinkansen.",
    "The ride takes 3.5 hours from Tokyo.",
    "Dr. Sato opens at 9 a.m. on weekdays.",
])
def test_abbreviations_and_numbers_do_not_split_a_sentence(text):
    # fed word by word, as an LLM streams it
    words = text.split(" ")
    done, rest = feed_all([w if i == 0 else " " + w for i, w in enumerate(words)] + [" Next one."])
    assert done == [text]
    assert rest == ["Next one."]


def test_a_gesture_tag_split_across_deltas_is_not_cut():
    done, rest = feed_all(["[gesture:sh", "ow_map] Here. ", "Kyoto is ", "[ges", "ture:nod] nice."])
    assert done == ["[gesture:show_map] Here."]
    assert rest == ["Kyoto is [gesture:nod] nice."]


def test_a_run_on_sentence_is_cut_at_a_comma():
    done, _ = feed_all(["We could visit the old temples, " * 10])
    assert done and all(len(s) <= 230 for s in done)


def test_tags_are_removed_and_known_gestures_kept(caplog):
    s = to_sentence("Sure [gesture:backflip] [Gesture: SHOW_MAP] , look here.", VOCAB)
    assert (s.text, s.gestures) == ("Sure, look here.", ("show_map",))
    assert "backflip" in caplog.text
    assert to_sentence("*smiles* Of course [laughs].", VOCAB).text == "Of course."


def test_split_text_gives_sentences_with_gestures():
    sentences = split_text("[gesture:bow] Welcome, Mr. Tanaka! Please wait.", VOCAB)
    assert [(s.text, s.gestures) for s in sentences] == [("Welcome, Mr. Tanaka!", ("bow",)), ("Please wait.", ())]


def test_gesture_instructions_list_the_vocabulary():
    text = gesture_instructions(VOCAB)
    assert "[gesture:bow]" in text and "show_map: show a map" in text
    assert gesture_instructions({}) == ""


class ScriptedLLM:
    """Deltas, then optionally an exception: what a real server cannot be made to do on cue."""

    def __init__(self, deltas, error=None):
        self.deltas, self.error, self.closed = deltas, error, False

    async def stream(self, messages):
        try:
            for delta in self.deltas:
                yield delta
            if self.error:
                raise self.error
        finally:
            self.closed = True


async def texts(reply):
    return [s.text async for s in reply.sentences()]


async def test_reply_streams_sentences_and_stops_at_the_cap():
    llm = ScriptedLLM(["One. ", "One. ", "Two. ", "Three. ", "Four. ", "Five."])
    reply = Reply(llm, [], RULES)
    assert await texts(reply) == ["One.", "Two.", "Three."]  # no repeats, at most 3
    assert llm.closed and reply.first_token_at is not None and not reply.errors


@pytest.mark.parametrize("error, reason", [
    (LLMError("no answer after 3 attempts: timed out"), "no answer after 3 attempts: timed out"),
    (json.JSONDecodeError("Expecting value", "{", 1), "JSONDecodeError: Expecting value: line 1 column 2 (char 1)"),
])
async def test_any_failure_before_a_sentence_ends_in_the_apology(error, reason):
    reported = []
    reply = Reply(ScriptedLLM(["Kyoto is"], error), [], RULES, on_error=reported.append)
    assert await texts(reply) == ["Sorry, say that again?"]
    assert reply.errors == [f"llm: {reason}"] and reported == [reason]


async def test_a_failure_after_a_sentence_keeps_what_was_said():
    reply = Reply(ScriptedLLM(["Kyoto is lovely. ", "Nara"], LLMError("reply cut off")), [], RULES)
    assert await texts(reply) == ["Kyoto is lovely."]
    assert reply.errors == ["llm: reply cut off"]


async def test_an_llm_line_said_in_an_earlier_turn_is_not_said_again():
    """The embedded 135M model copies its last reply's lines back, stale or not: "Noted: when
    April." after the customer said May. A sentence the robot said before (or most of its words)
    is skipped; the rest of the reply is said."""
    class Copying:
        async def stream(self, messages):
            for delta in ("Noted: when April. ", "Kyoto is lovely in May. ", "Nara is close."):
                yield delta

    history = [{"role": "system", "content": "You are a travel consultant."},
               {"role": "assistant", "content": "Noted: travellers 2 adults; when April. Shall I tell you more?"},
               {"role": "user", "content": "Actually not April, May."}]
    reply = Reply(Copying(), history, ReplyRules(gestures={}, max_sentences=3, apology="Sorry."))
    assert [s.text async for s in reply.sentences()] == ["Kyoto is lovely in May.", "Nara is close."]


async def test_a_reply_that_only_repeats_an_earlier_line_is_said_rather_than_an_apology():
    class Same:
        async def stream(self, messages):
            yield "Happy to help with your trip."

    history = [{"role": "assistant", "content": "Happy to help with your trip."},
               {"role": "user", "content": "We would like to see Kyoto."}]
    reply = Reply(Same(), history, ReplyRules(gestures={}, max_sentences=3, apology="Sorry."))
    assert [s.text async for s in reply.sentences()] == ["Happy to help with your trip."]


# --- the first clause said before its sentence ends (tts.first_chunk: clause) ----------------

CLAUSE_RULES = ReplyRules(gestures=VOCAB, max_sentences=1, apology="Sorry.", first_clause=True)


def test_the_first_clause_comes_out_once_its_mark_and_the_next_space_are_written():
    splitter = SentenceSplitter(first_clause=True)
    assert splitter.feed("Of course") == []
    assert splitter.feed(",") == []  # "9," may still become "9,800"
    assert splitter.feed(" Kyoto") == ["Of course,"]
    # only the first clause: the rest of the reply comes in whole sentences
    assert splitter.feed(" is lovely, really. Nara") == ["Kyoto is lovely, really."]
    assert splitter.flush() == ["Nara"]


@pytest.mark.parametrize("pieces, first", [
    (["It costs 9,", "800 yen", ", or less. "], "It costs 9,800 yen,"),  # a number's comma is no clause
    (["[gesture: nod] Sure", ", here you are. "], "[gesture: nod] Sure,"),  # nor a mark in a tag
    (["Mr. Tanaka", ", our guide, meets you. "], "Mr. Tanaka,"),
    (["Let me check that for you. ", "Kyoto, then."], "Let me check that for you."),  # a sentence first
])
def test_where_the_first_clause_ends(pieces, first):
    splitter = SentenceSplitter(first_clause=True)
    out = [piece for delta in pieces for piece in splitter.feed(delta)] + splitter.flush()
    assert out[0] == first
    assert " ".join(out) == " ".join(p.strip() for p in "".join(pieces).split(" ") if p)


def test_without_first_clause_a_sentence_is_handed_out_whole():
    splitter = SentenceSplitter()
    assert splitter.feed("Of course, Kyoto") == []
    assert splitter.feed(" is lovely. Nara") == ["Of course, Kyoto is lovely."]


async def test_the_first_clause_is_spoken_while_the_llm_writes_on():
    """The point of it: the robot starts talking before the model ends its first sentence."""
    go_on = asyncio.Event()

    class Slow:
        async def stream(self, messages):
            yield "Of course"
            yield ", Kyoto"
            await go_on.wait()  # the model still writing
            yield " is lovely in April. Nara is close."

    sentences = Reply(Slow(), [], CLAUSE_RULES).sentences()
    first = await asyncio.wait_for(anext(sentences), 5)
    assert first.text == "Of course," and not go_on.is_set()
    go_on.set()
    # the clause is no sentence of max_sentences (1): its sentence is said to its end
    assert [s.text async for s in sentences] == ["Kyoto is lovely in April."]


async def test_a_first_clause_that_copies_an_earlier_line_is_judged_with_its_sentence():
    """"Noted:" alone copies the robot's last line; said or skipped alone, half a sentence would
    be heard. Joined to its rest, the copy check sees the sentence as before."""
    history = [{"role": "assistant", "content": "Noted: travellers 2 adults; when April."},
               {"role": "user", "content": "Actually not April, May."}]
    rules = ReplyRules(gestures={}, max_sentences=3, apology="Sorry.", first_clause=True)
    new = Reply(ScriptedLLM(["Noted", ": when", " May. ", "Nara is close."]), history, rules)
    assert await texts(new) == ["Noted: when May.", "Nara is close."]
    copied = Reply(ScriptedLLM(["Noted", ": travellers 2 adults", "; when April. ", "Kyoto is lovely."]), history, rules)
    assert await texts(copied) == ["Kyoto is lovely."]


# --- the robot's own lines are not the LLM's to write ------------------------------------

@pytest.mark.parametrize("first_clause", [False, True])
async def test_an_llm_sentence_that_begins_as_the_robots_own_line_is_not_said(first_clause):
    """The 135M model, with "Noted: when April; places Kyoto." in the history, wrote "Noted: in
    April; carried lessons." to a question it misheard: the robot's bookkeeping about words it
    never had. Such a sentence is skipped, the clause first or not; the rest is said."""
    imitating = ScriptedLLM(["Noted", ": in April", "; carried lessons. ", "Kyoto is lovely in spring. ", "Bye."])
    rules = ReplyRules(gestures={}, max_sentences=3, apology="Sorry?", first_clause=first_clause,
                       own_heads=("Noted:",))
    assert await texts(Reply(imitating, [], rules)) == ["Kyoto is lovely in spring.", "Bye."]


async def test_a_reply_that_only_imitates_the_robots_own_line_is_the_apology():
    history = [{"role": "assistant", "content": "Noted: when April; places Kyoto."},
               {"role": "user", "content": "Thank you, Happy Fall for today."}]
    rules = ReplyRules(gestures={}, max_sentences=3, apology="Sorry?", own_heads=("Noted:",))
    assert await texts(Reply(ScriptedLLM(["Noted: thank you; happy fall."]), history, rules)) == ["Sorry?"]


def test_the_heads_of_a_personas_own_lines():
    from config.loader import DEFAULT_PERSONA, load_persona
    from robot.dialogue.turn_handlers import own_heads

    persona = load_persona(DEFAULT_PERSONA)
    assert own_heads(persona) == ("Noted:", "Here is our plan so far:", "Shall I tell you more?")
    # a head too short to tell from the LLM's own words is left out
    assert own_heads(persona.model_copy(update={"noted": "Okay, {profile}.", "recap": None, "more_offer": None})) == ()


STOCK_RULES = ReplyRules(gestures=VOCAB, max_sentences=3, apology="Sorry, say that again?",
                         stock=("i'm sorry, i don't have that information here.",))
HANDED_OVER = [{"role": "user", "content": "How long is the train from Tokyo?"},
               {"role": "assistant", "content": "I'm sorry, I don't have that information here. Shall I call staff?"},
               {"role": "user", "content": "Thank you, Happy Fall for today."}]


async def test_a_reply_that_begins_with_the_robots_own_i_dont_know_again_says_it_at_once_and_ends():
    """The 135M model answered a misheard line with the shop's no_answer line again: a copy,
    held for something new until the model had finished. A copy of one of the persona's own
    "I cannot help there" lines is said at once, and the request closed there."""
    llm = ScriptedLLM(["I'm sorry, I don't have that information here. ", "Shall I call staff? ",
                       "The train takes 2 hours. "])
    reply = Reply(llm, HANDED_OVER, STOCK_RULES)
    assert await texts(reply) == ["I'm sorry, I don't have that information here."]
    assert llm.closed
    # any other copy still waits for something new, and the new is said instead
    llm = ScriptedLLM(["Shall I call staff? ", "The train takes 2 hours. "])
    assert await texts(Reply(llm, HANDED_OVER, STOCK_RULES)) == ["The train takes 2 hours."]
    # the stock line said for the first time is an LLM sentence like any other: the reply goes on
    llm = ScriptedLLM(["I'm sorry, I don't have that information here. ", "Try the station desk. "])
    assert await texts(Reply(llm, HANDED_OVER[:1], STOCK_RULES)) == [
        "I'm sorry, I don't have that information here.", "Try the station desk."]


def test_the_stock_lines_of_a_persona_are_its_no_answer_and_apology_sentence_by_sentence():
    from config.loader import DEFAULT_PERSONA, load_persona
    from robot.dialogue.turn_handlers import stock_lines

    persona = load_persona(DEFAULT_PERSONA)
    # statements only: an offer to call the staff is the hand-over's, which calls them
    assert stock_lines(persona) == ("i'm sorry, i don't have that information here.",
                                    "i'm sorry, i lost my train of thought.")
    assert stock_lines(persona.model_copy(update={"knowledge": None})) == ("i'm sorry, i lost my train of thought.",)


async def test_an_llm_sentence_that_says_the_visitors_words_in_their_voice_is_not_said():
    """Asked "Yes, please" with nothing offered, the 135M model went on with the customer's
    first line ("Hello, my name is Ken, I'm going to Kyoto Nara."): the robot introducing
    itself as the visitor. A sentence that copies a visitor's line and keeps its first person
    is skipped; the visitor's facts said back, or the robot's own "I", are said."""
    from memory.recall.slots.language import EN

    history = [{"role": "user", "content": "Hello, my name is Ken I would like to plan a trip to Kyoto Nara"},
               {"role": "assistant", "content": "Nice to meet you, Ken."},
               {"role": "user", "content": "Yes, please."}]
    rules = ReplyRules(gestures={}, max_sentences=3, apology="Sorry?", first_person=EN.first_person)
    parrot = ScriptedLLM(["Hello, my name is Ken, I'm going to Kyoto Nara. ", "Kyoto and Nara make a lovely trip. ",
                          "I can plan a trip to Kyoto and Nara for you."])
    assert await texts(Reply(parrot, history, rules)) == ["Kyoto and Nara make a lovely trip.",
                                                          "I can plan a trip to Kyoto and Nara for you."]
    # a visitor come back: their first line is only in the summary, which quotes it
    summary = [{"role": "system", "content": 'You are Sakura.\nCustomer said: "Hello, my name is Ken I would like to '
                                             'plan a trip to Kyoto Nara"'}, {"role": "user", "content": "Yes, please."}]
    came_back = ScriptedLLM(["Hello, my name is Ken, I'm going to Kyoto Nara. ", "Kyoto and Nara make a lovely trip."])
    assert await texts(Reply(came_back, summary, rules)) == ["Kyoto and Nara make a lovely trip."]
    # two of their lines run together ("We are two adults." "We want to go in April ...")
    facts = [{"role": "system", "content": 'Customer\'s own words: "my name is Ken." "We are two adults." '
                                           '"We want to go in April and our budget is $2,000."'},
             {"role": "user", "content": "Yes, please."}]
    merged = ScriptedLLM(["Hello, We're two adults and we want to go in April and our budget is $2,000. ",
                          "We can find a ryokan for two adults in April. ", "Our budget rooms start at 3,000 yen."])
    assert await texts(Reply(merged, facts, rules)) == ["We can find a ryokan for two adults in April.",
                                                        "Our budget rooms start at 3,000 yen."]
    # without the language's first-person words (a language with no word lists) it is said
    plain = ReplyRules(gestures={}, max_sentences=3, apology="Sorry?")
    assert (await texts(Reply(ScriptedLLM(["Hello, my name is Ken, I'm going to Kyoto Nara."]), history, plain))
            == ["Hello, my name is Ken, I'm going to Kyoto Nara."])


def test_the_first_person_words_of_a_personas_language():
    from config.loader import DEFAULT_PERSONA, load_persona
    from robot.dialogue.turn_handlers import first_person

    persona = load_persona(DEFAULT_PERSONA)
    assert {"i", "my", "we", "our"} <= set(first_person(persona))
    assert {"ich", "wir"} <= set(first_person(persona.model_copy(update={"language": "de"})))
    assert first_person(persona.model_copy(update={"language": "ja"})) == ()
