"""Finding sound devices with sounddevice (PortAudio), and turning its errors into one line."""

from __future__ import annotations

from typing import Any, Literal

from speech.types import AudioDeviceError

Kind = Literal["input", "output"]


def import_sounddevice() -> Any:
    """sounddevice loads libportaudio at import time; a missing library is a device error."""
    try:
        import sounddevice
    except OSError as exc:  # "PortAudio library not found"
        raise AudioDeviceError(f"cannot use sound devices: {exc} (install libportaudio2)") from exc
    return sounddevice


def resolve_device(device: str | int | None, kind: Kind) -> dict[str, Any]:
    """The device's info dict (name, index, default_samplerate, channels), or AudioDeviceError.

    ``device`` is an index, a name (any part of it, as sounddevice matches), or None for the
    system default."""
    sd = import_sounddevice()
    try:
        info = dict(sd.query_devices(device, kind=kind))
    except (ValueError, sd.PortAudioError) as exc:
        raise AudioDeviceError(_missing_message(sd, device, kind, exc)) from None
    if info.get(f"max_{kind}_channels", 0) < 1:
        raise AudioDeviceError(f"audio device {info.get('name')!r} has no {kind} channels; see `robot devices`")
    return info


def _missing_message(sd: Any, device: str | int | None, kind: Kind, exc: Exception) -> str:
    try:
        count = len(sd.query_devices())
    except sd.PortAudioError:
        count = 0
    setting = "audio.input_device" if kind == "input" else "audio.output_device"
    if count == 0:
        return f"no audio {kind} device: this machine has no sound card that PortAudio can see"
    which = "the default device" if device is None else f"{device!r}"
    return f"audio {kind} device {which} not found ({exc}); set {setting}, see `robot devices`"


def pick_rate(sd: Any, device: int, kind: Kind, wanted: int | None, preferred: int, default: float) -> int:
    """The rate to open the device at: ``wanted`` if given, else ``preferred`` (16 kHz for
    the mic, the speech's own rate for the speaker) when the device takes it, else its default."""
    if wanted:
        return int(wanted)
    check = sd.check_input_settings if kind == "input" else sd.check_output_settings
    try:
        check(device=device, samplerate=preferred, channels=1, dtype="int16")
        return preferred
    except Exception:  # PortAudio says "invalid sample rate" in several ways
        return int(default)


def list_devices() -> str:
    """A readable list of sound devices with their index, channels and default rate."""
    try:
        sd = import_sounddevice()
        devices = sd.query_devices()
    except AudioDeviceError as exc:
        return str(exc)
    except Exception as exc:  # a broken audio stack should still give a readable answer
        return f"cannot list audio devices: {exc}"
    if len(devices) == 0:
        return "no audio devices found (no sound card that PortAudio can see)"
    default_in, default_out = sd.default.device
    lines = []
    for dev in devices:
        marks = ("<" if dev["index"] == default_in else " ") + (">" if dev["index"] == default_out else " ")
        lines.append(
            f"{marks} {dev['index']:>3} {dev['name']}  "
            f"(in {dev['max_input_channels']}, out {dev['max_output_channels']}, "
            f"{dev['default_samplerate']:.0f} Hz)"
        )
    lines.append("< default input, > default output")
    return "\n".join(lines)
