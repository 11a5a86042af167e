"""Bad configuration gives one clear error naming file, key and line, and nothing starts."""

from pathlib import Path

import pytest

from config.loader import DEFAULT_PERSONA, ConfigError, load_persona, load_scenario, load_settings
from robot.cli import EXIT_CONFIG, main

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_files_are_valid():
    settings = load_settings()
    assert settings.llm.backend == "embedded"
    persona = load_persona(DEFAULT_PERSONA)
    assert persona.state_gestures["thinking"] in persona.gestures
    scenario = load_scenario(REPO / "config/scenarios/travel_consultation.yaml")
    assert scenario.persona == DEFAULT_PERSONA
    assert len(scenario.turns) >= 3


def test_wrong_type_names_key_and_line(tmp_path):
    path = write(tmp_path, "s.yaml", "audio:\n  block_ms: 20\nvad:\n  hangover_ms: soon\n")
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    message = str(err.value)
    assert str(path) in message
    assert "key 'vad.hangover_ms'" in message
    assert "line 4" in message


def test_unknown_key_is_rejected_at_its_line(tmp_path):
    path = write(tmp_path, "p.yaml", "name: A\nrole_prompt: hi\nmemroy:\n  strategy: rsum\n")
    with pytest.raises(ConfigError) as err:
        load_persona(path)
    assert "line 3: key 'memroy': unknown key" in str(err.value)


def test_nested_value_out_of_range(tmp_path):
    path = write(tmp_path, "p.yaml", "name: A\nrole_prompt: hi\nmemory:\n  strategy: rsum\n  swin_window: 0\n")
    with pytest.raises(ConfigError) as err:
        load_persona(path)
    assert "line 5: key 'memory.swin_window'" in str(err.value)


def test_missing_required_key(tmp_path):
    path = write(tmp_path, "p.yaml", "name: A\n")
    with pytest.raises(ConfigError, match="key 'role_prompt': Field required"):
        load_persona(path)


def test_broken_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "p.yaml", "name: A\nrole_prompt: [unclosed\ngreeting: hi\n")
    with pytest.raises(ConfigError) as err:
        load_persona(path)
    assert "broken YAML" in str(err.value) and "line 3" in str(err.value)


def test_missing_persona_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_persona(tmp_path / "nobody.yaml")


def test_scenario_turn_needs_text_or_wav(tmp_path):
    path = write(tmp_path, "sc.yaml", f"name: x\npersona: {DEFAULT_PERSONA}\nturns:\n  - pause_before_s: 1\n")
    with pytest.raises(ConfigError, match="turns.0"):
        load_scenario(path)


def test_environment_overrides_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    settings = load_settings()
    assert settings.llm.api_key == "sk-test"
    assert settings.llm.base_url == "http://127.0.0.1:1/v1"


@pytest.mark.parametrize("command", ["chat", "run"])
def test_cli_exits_nonzero_before_starting(tmp_path, capsys, command):
    bad = write(tmp_path, "p.yaml", "name: A\nrole_prompt: hi\nrate: fast\n")
    assert main([command, "--persona", str(bad)]) == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "configuration error" in err and "line 3: key 'rate'" in err
    assert "Traceback" not in err


def test_cli_missing_persona(tmp_path, capsys):
    assert main(["chat", "--persona", str(tmp_path / "missing.yaml")]) == EXIT_CONFIG
    assert "file not found" in capsys.readouterr().err
