"""The console in a real browser (Debian's chromium, headless, through Playwright) against
the running simulation: transcript lines appear, the state changes, "stop" cuts speech,
the latency plot has one point per turn and stage. A screenshot is kept in the tmp dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.console.conftest import TOKEN, wait_for

CHROMIUM = Path("/usr/bin/chromium")
LONG_TEXT = " ".join(f"This is sentence number {n} of a long announcement." for n in range(1, 13))

# Every value the state badge takes, in order (installed before the page's own script runs).
RECORD_STATES = """
window.__states = [];
document.addEventListener("DOMContentLoaded", () => {
  const badge = document.getElementById("state");
  new MutationObserver(() => {
    const s = badge.dataset.state;
    if (s && window.__states[window.__states.length - 1] !== s) window.__states.push(s);
  }).observe(badge, {attributes: true, attributeFilter: ["data-state"]});
});
"""


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed: run scripts/setup.sh --test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield browser
        browser.close()


def test_console_follows_and_steers_the_simulation(console_sim, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.add_init_script(RECORD_STATES)
    page.goto(console_sim.url + f"?token={TOKEN}")
    assert "token" not in page.url  # kept in a cookie, out of the address bar

    # the scenario plays in real time; the page follows it live
    wait_for(lambda: "Scenario done" in console_sim.log.read_text(), 240, "the scenario to finish")
    turns = console_sim.status()["turns"]  # the turn events, texts included
    assert len(turns) == len(console_sim.turns()) == 2
    page.wait_for_function("document.querySelectorAll('#transcript li.customer').length === 2")
    customer = page.locator("#transcript li.customer .text").all_inner_texts()
    assert customer == [t["user_text"] for t in turns]
    for t in turns:
        robot = page.locator(f'#transcript li.robot[data-key="{t["turn_id"]}"] .text').inner_text()
        assert robot == t["reply_text"] and robot
    # what the robot knows of the visitor: the persona's profile slots, with its labels, as the memory
    # holds them: "two adults" (or "2 adults", as Whisper writes it) said back one way
    known = dict(console_sim.status()["memory"]["profile"])
    assert list(known) == ["Travellers", "Places"] and known["Travellers"] == "2 adults", known
    assert known["Places"].startswith("Kyoto"), known  # ("Nara" if Whisper heard it)
    page.wait_for_function(f"document.querySelectorAll('#profile dd')[1]?.textContent === {known['Places']!r}",
                           timeout=10_000)
    assert page.locator("#profile dt").all_inner_texts() == ["Travellers", "Places"]
    assert page.locator("#profile dd").all_inner_texts() == ["2 adults", known["Places"]]
    assert page.locator("#profile-none").is_hidden()
    states = page.evaluate("window.__states")
    assert {"thinking", "speaking", "idle"} <= set(states), states

    # one point per turn on each stage's line
    page.wait_for_function("document.querySelectorAll('#plot circle.first_audio_s').length === 2")
    for stage in ("transcript_s", "first_token_s", "first_audio_s"):
        assert page.locator(f"#plot circle.{stage}").count() == len(turns)

    # say a long text, then stop it: speech ends long before the text would
    page.fill("#say-text", LONG_TEXT)
    page.click("#say")
    page.wait_for_selector('#state[data-state="speaking"]', timeout=30_000)
    page.wait_for_timeout(500)
    page.click("#stop")
    page.wait_for_selector('#state[data-state="idle"]', timeout=5_000)
    # the say command's answer follows the stop; on a loaded CI machine it took over 5 s once
    page.wait_for_function("document.getElementById('answer').textContent.startsWith('say:')", timeout=15_000)
    said = page.locator("#transcript li.robot:not([data-key])").last.inner_text()
    assert "sentence number 1 " in said and "number 12" not in said, said
    page.wait_for_timeout(1500)  # nothing more is announced after the stop
    assert page.locator("#transcript li.robot:not([data-key])").last.inner_text() == said

    # forget the visitor now talking: the page says so, and what it knew of them is gone
    page.on("dialog", lambda dialog: dialog.accept())  # "Delete everything the robot remembers of ...?"
    page.click("#forget")
    page.wait_for_selector("#transcript li.note", timeout=15_000)
    assert "forgotten (asked by the operator)" in page.locator("#transcript li.note").last.inner_text()
    page.wait_for_selector("#profile-none:not([hidden])", timeout=10_000)
    assert page.locator("#transcript li.customer, #transcript li.robot").count() == 0
    assert all(not t["user_text"] and not t["reply_text"] for t in console_sim.status()["turns"])
    late = browser.new_page()  # a page opened afterwards replays none of the words
    late.goto(console_sim.url + f"?token={TOKEN}")
    late.wait_for_selector("#transcript li.note", timeout=15_000)
    assert late.locator("#transcript li.customer, #transcript li.robot").count() == 0
    late.close()

    shot = tmp_path / "console.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    shutil.copy(shot, console_sim.out / "console.png")  # next to the run's own output
