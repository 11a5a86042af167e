from robot.gestures import gesture_instructions, parse_sentence
from robot.sentences import SentenceSplitter

VOCAB = {"bow": "a bow", "show_map": "show a map", "nod": "a nod"}


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


def test_a_gesture_tag_split_across_deltas_is_not_cut():
    done, rest = feed_all(["[gesture:sh", "ow_map] Here. ", "Kyoto is ", "[ges", "ture:nod] nice."])
    assert done == ["[gesture:show_map] Here."]
    assert rest == ["Kyoto is [gesture:nod] nice."]


def test_a_run_on_sentence_is_cut_at_a_comma():
    long = "We could visit the old temples, " * 10
    done, _ = feed_all([long])
    assert done and all(len(s) <= 230 for s in done)


def test_tags_are_removed_and_known_gestures_kept():
    s = parse_sentence("[gesture:bow] Welcome to our agency!", VOCAB)
    assert s.text == "Welcome to our agency!"
    assert s.gestures == ("bow",)


def test_unknown_gestures_are_dropped_with_a_warning(caplog):
    s = parse_sentence("Sure [gesture:backflip] [Gesture: SHOW_MAP] , look here.", VOCAB)
    assert s.text == "Sure, look here."
    assert s.gestures == ("show_map",)
    assert s.dropped == ("backflip",)
    assert "backflip" in caplog.text


def test_stage_directions_are_not_spoken():
    assert parse_sentence("*smiles* Of course [laughs].", VOCAB).text == "Of course."


def test_gesture_instructions_list_the_vocabulary():
    text = gesture_instructions(VOCAB)
    assert "[gesture:bow]" in text and "show_map: show a map" in text
    assert gesture_instructions({}) == ""
