"""The consultation sheet on the operator console, in a real browser (Debian's chromium through
Playwright): a visitor consults the travel persona (the real controller, knowledge and offers),
asks to book, and the card a member of staff reads shows who, the party, the plan priced and the
total, and prints alone (its screenshot, kept in the test's tmp dir, is docs/images/consultation_sheet.png)."""

from __future__ import annotations

import asyncio
import socket
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, load_persona, load_settings
from robot.core.events import HandoverEvent
from tests.embedding_cache import shared_embeddings

CHROMIUM = Path("/usr/bin/chromium")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_booking_shows_its_sheet_as_a_card_staff_can_print(tmp_path):
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed: run scripts/setup.sh --test")
    from robot.app.runtime import open_runtime

    settings = load_settings()
    settings.memory.store, settings.memory.db_path = None, tmp_path / "memory.sqlite3"
    settings.knowledge.cache_dir = shared_embeddings(tmp_path)
    settings.console.enabled, settings.console.port = True, _free_port()
    persona = load_persona(DEFAULT_PERSONA)
    async with open_runtime(settings, persona, DEFAULT_PERSONA, audio_out="text", listen=False) as rt:
        c = rt.controller
        await c.sessions.start("card-4711")
        with redirect_stdout(StringIO()):
            for line in ("Hello, we are two adults and one child, our budget is 30,000 yen for one day in Kyoto.",
                         "Let's take the Nara tour.", "Can you book it for us?"):
                await c.handle_text(line)
        sheet = rt.recorder.of(HandoverEvent)[-1].sheet
        assert sheet["party"] == "2 adults, 1 child" and sheet["plan"][0]["offer"] == "Nara Deer Park Half-Day Tour"
        assert sheet["total"] == "16,200 yen"  # 2 x 6,500 + 3,200: the files' prices, computed
        url = f"http://127.0.0.1:{settings.console.port}/"
        card = await asyncio.to_thread(_card_in_browser, url, tmp_path / "sheet.png")
    assert card["hidden"] is False
    assert "2 adults, 1 child" in card["text"] and "Nara Deer Park Half-Day Tour" in card["text"]
    assert "16,200 yen" in card["total"]
    assert card["printed_only_the_card"]


def _card_in_browser(url: str, shot: Path) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url)
        page.wait_for_selector("#sheet-card:not([hidden])", timeout=20_000)  # the handover, replayed to the page
        card = page.locator("#sheet-card")
        card.screenshot(path=str(shot))
        page.emulate_media(media="print")
        printed = page.evaluate("""() => [...document.querySelectorAll('main > .transcript, body > header')]
                                       .every(e => getComputedStyle(e).display === 'none')
                                     && getComputedStyle(document.getElementById('sheet-card')).display !== 'none'""")
        out = {"hidden": card.get_attribute("hidden") is not None, "text": card.inner_text(),
               "total": page.locator("#sheet-total").inner_text(), "printed_only_the_card": printed}
        browser.close()
    return out
