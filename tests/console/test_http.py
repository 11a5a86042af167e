"""The console's HTTP contract against the running simulation: the token on every path,
and controls that are malformed are refused with a reason and change nothing."""

from __future__ import annotations

import json

import pytest

from tests.console.conftest import TOKEN, wait_for

PATHS = ["/", "/static/console.js", "/api/status", "/api/events", "/metrics"]
JSON = {"Content-Type": "application/json"}


@pytest.mark.parametrize("path", PATHS + ["/api/command"])
def test_no_token_or_a_wrong_one_is_401(console_sim, path):
    data = b'{"command": "mute"}' if path == "/api/command" else None
    headers = JSON if data else {}
    assert console_sim.request(path, token=None, data=data, headers=headers)[0] == 401
    assert console_sim.request(path, token="wrong", data=data, headers=headers)[0] == 401
    cookie = {"Cookie": "robot_console=wrong", **headers}
    assert console_sim.request(path, token=None, data=data, headers=cookie)[0] == 401
    assert console_sim.request(f"{path}?token=wrong", token=None, data=data, headers=headers)[0] == 401
    assert console_sim.status()["muted"] is False  # the refused mute did nothing


@pytest.mark.parametrize("path", PATHS)
def test_the_right_token_opens_every_path(console_sim, path):
    code, body = console_sim.request(path)
    assert code == 200, body
    if path == "/api/events":
        assert body.startswith(b"retry:")


def test_the_page_link_with_the_token_sets_a_cookie_and_drops_it_from_the_address(console_sim):
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(console_sim.url + f"?token={TOKEN}", timeout=10)
        raise AssertionError("expected a redirect")
    except urllib.error.HTTPError as exc:
        assert exc.code == 303 and exc.headers["Location"] == "/"
        cookie = exc.headers["Set-Cookie"]
    assert f"robot_console={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert console_sim.request("/api/status", token=None, headers={"Cookie": f"robot_console={TOKEN}"})[0] == 200


MALFORMED = [
    (b"not json", "malformed JSON"),
    (b"[1, 2]", "must be a JSON object"),
    (b'{"text": "hi"}', "missing field 'command'"),
    (b'{"command": "dance"}', "unknown command 'dance'"),
    (b'{"command": "mute", "volume": 3}', "unknown field"),
    (b'{"command": "say", "text": ""}', "'text'"),
    (b'{"command": "persona", "path": "../../etc/passwd"}', "leaves the persona directory"),
    (b'{"command": "persona", "path": "/etc/passwd"}', "must be relative"),
    (b'{"command": "say", "text": "' + b"a" * 5000 + b'"}', "too large"),
]


@pytest.mark.parametrize("payload,reason", MALFORMED, ids=[r for _, r in MALFORMED])
def test_a_malformed_control_is_refused_with_its_reason_and_changes_nothing(console_sim, payload, reason):
    before = console_sim.status()
    code, body = console_sim.request("/api/command", data=payload, headers=JSON)
    assert code == 400
    assert reason in json.loads(body)["error"]
    after = console_sim.status()
    assert (after["muted"], after["persona"], after["memory"]["role_prompt_version"]) == (
        before["muted"], before["persona"], before["memory"]["role_prompt_version"])


def test_a_control_that_is_not_json_typed_is_415(console_sim):
    code, body = console_sim.request("/api/command", data=b'{"command": "mute"}',
                                     headers={"Content-Type": "text/plain"})
    assert code == 415 and console_sim.status()["muted"] is False


@pytest.fixture
def finished_sim(console_sim):
    """The simulation once its scenario is over: muting it earlier would lose a turn."""
    wait_for(lambda: "Scenario done" in console_sim.log.read_text(), 240, "the scenario to finish")
    return console_sim


def test_a_control_the_robot_cannot_do_is_409_with_the_reason(finished_sim):
    console_sim = finished_sim
    code, body = console_sim.request("/api/command", data=b'{"command": "persona", "path": "no_such_persona"}',
                                     headers=JSON)
    assert code == 409 and "persona failed" in json.loads(body)["error"]
    assert console_sim.status()["persona"]["file"] == "persona.yaml"


def test_mute_and_unmute_go_through(finished_sim):
    console_sim = finished_sim
    assert console_sim.request("/api/command", data=b'{"command": "mute"}', headers=JSON)[0] == 200
    assert console_sim.status()["muted"] is True
    code, body = console_sim.request("/api/command", data=b'{"command": "unmute", "id": "op-1"}', headers=JSON)
    assert code == 200 and json.loads(body)["detail"] == "microphone unmuted"
    assert console_sim.status()["muted"] is False


def test_the_page_shows_the_visitor_and_ends_their_session(finished_sim):
    console_sim = finished_sim
    status = console_sim.status()
    assert status["session"]["open"] and status["session"]["turns"] == 2  # the scenario's two turns
    assert status["memory"]["user"].startswith("anonymous-") and status["memory"]["can_forget"]
    code, body = console_sim.request("/api/command", data=b'{"command": "session/end"}', headers=JSON)
    assert code == 200 and json.loads(body)["detail"] == "session ended"
    after = console_sim.status()
    assert not after["session"]["open"] and after["memory"]["role_prompt_version"] == 0
    assert not after["memory"]["can_forget"]  # no visitor now
