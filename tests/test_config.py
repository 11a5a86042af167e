"""Bad configuration gives one clear error naming file, key and line, and nothing starts."""

from pathlib import Path

import pytest

from config.loader import (
                           DEFAULT_PERSONA,
                           ENVIRONMENT,
                           ConfigError,
                           EnvOverrides,
                           load_persona,
                           load_scenario,
                           load_settings,
                           )
from robot.app.cli import EXIT_CONFIG, main

REPO = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_files_are_valid(clean_env):
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


ENV_VARIABLES = ["OPENAI_BASE_URL", "OPENAI_API_KEY", "ROBOT_LLM_MODEL", "ROBOT_LLM_BACKEND",
                 "MQTT_USERNAME", "MQTT_PASSWORD"]
SECRET_KEY, SECRET_PASSWORD = "sk-test-0123456789abcdef", "hunter2-mqtt-pw"


@pytest.fixture
def clean_env(monkeypatch):
    """None of the override variables set (the developer's own shell may set some)."""
    for name in ENV_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def file_settings(tmp_path: Path) -> Path:
    """A settings file that sets every value the environment can override."""
    return write(tmp_path, "s.yaml", "llm:\n  backend: embedded\n  model: from-file\n  base_url: http://file:1/v1\n"
                                     "  api_key: file-key\nmqtt:\n  username: file-user\n  password: file-pw\n")


@pytest.mark.parametrize(("variable", "value", "section", "key"), [
    ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1", "llm", "base_url"),
    ("OPENAI_API_KEY", SECRET_KEY, "llm", "api_key"),
    ("ROBOT_LLM_MODEL", "qwen2.5-7b-instruct", "llm", "model"),
    ("ROBOT_LLM_BACKEND", "openai", "llm", "backend"),
    ("MQTT_USERNAME", "kiosk7", "mqtt", "username"),
    ("MQTT_PASSWORD", SECRET_PASSWORD, "mqtt", "password"),
])
def test_each_environment_variable_overrides_the_file(clean_env, file_settings, variable, value, section, key):
    from_file = load_settings(file_settings)
    clean_env.setenv(variable, value)
    settings = load_settings(file_settings)
    assert getattr(getattr(settings, section), key) == value
    # and nothing else moved
    assert settings.model_dump(exclude={section: {key}}) == from_file.model_dump(exclude={section: {key}})


def test_unset_or_empty_variables_keep_the_file(clean_env, file_settings):
    clean_env.setenv("ROBOT_LLM_MODEL", "")
    clean_env.setenv("openai_api_key", "lower-case-is-another-variable")
    settings = load_settings(file_settings)
    assert (settings.llm.model, settings.llm.api_key, settings.mqtt.password) == ("from-file", "file-key", "file-pw")


def test_invalid_backend_is_a_config_error_naming_the_variable(clean_env):
    clean_env.setenv("ROBOT_LLM_BACKEND", "ollama")
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert err.value.path == ENVIRONMENT
    assert str(err.value) == ("environment: variable ROBOT_LLM_BACKEND: "
                              "Input should be 'embedded' or 'openai' (got 'ollama')")


def test_invalid_backend_stops_the_cli_with_status_2(clean_env, capsys):
    clean_env.setenv("ROBOT_LLM_BACKEND", "ollama")
    assert main(["chat"]) == EXIT_CONFIG == 2
    err = capsys.readouterr().err
    assert "configuration error" in err and "ROBOT_LLM_BACKEND" in err and "Traceback" not in err


def test_secrets_are_not_in_the_overrides_repr(clean_env):
    clean_env.setenv("OPENAI_API_KEY", SECRET_KEY)
    clean_env.setenv("MQTT_PASSWORD", SECRET_PASSWORD)
    overrides = EnvOverrides()
    for text in (repr(overrides), str(overrides), repr(overrides.model_dump())):
        assert SECRET_KEY not in text and SECRET_PASSWORD not in text
    assert overrides.api_key is not None and overrides.api_key.get_secret_value() == SECRET_KEY


def test_mqtt_password_is_not_in_the_settings_repr(clean_env):
    clean_env.setenv("MQTT_PASSWORD", SECRET_PASSWORD)
    settings = load_settings()
    assert settings.mqtt.password == SECRET_PASSWORD
    assert SECRET_PASSWORD not in repr(settings) and SECRET_PASSWORD not in str(settings.mqtt)


def test_api_key_is_not_in_the_settings_repr(clean_env):
    clean_env.setenv("OPENAI_API_KEY", SECRET_KEY)
    settings = load_settings()
    assert settings.llm.api_key == SECRET_KEY
    assert SECRET_KEY not in repr(settings) and SECRET_KEY not in str(settings.llm)


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


def test_the_patient_profile_is_the_turn_taking_before_fast_turns() -> None:
    # the defaults end a finished sentence at a 500 ms pause and read 10 s of audio;
    # config/patient_turns.yaml puts back the whole second of silence and Whisper's 30 s
    default = load_settings([])
    patient = load_settings([Path(__file__).resolve().parents[1] / "config" / "patient_turns.yaml"])
    assert (default.vad.end_of_turn, default.vad.words_alone_ms, default.stt.window_s) == ("smart_turn", 500, 10)
    assert (patient.vad.end_of_turn, patient.vad.words_alone_ms, patient.stt.window_s) == ("silence", 0, 30)
    assert patient.vad.hangover_ms == default.vad.hangover_ms == 1000
