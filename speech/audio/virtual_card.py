"""A PulseAudio virtual sound card, for live runs on a machine with no sound hardware.

A private PulseAudio server with two null sinks: ``speaker`` (the default output, what
``robot run`` plays) and ``mic_feed``, whose monitor is the default input (what the robot
records). A bench or a test speaks into the microphone with ``play`` and hears both sides
with ``record``: parec on a sink's monitor, each read stamped with time.monotonic() as it
arrives, so the feed and the loudspeaker lie on one timeline (within about 10-15 ms: the
two recorders' own buffering, alike for both). Needs ``pulseaudio`` and ``pulseaudio-utils``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

RATE = 16000
_READ = 320  # bytes: 10 ms of 16 kHz mono int16


class MonitorRecording:
    """Everything a sink's monitor carried since ``start``, as 16 kHz mono float samples."""

    def __init__(self, env: dict[str, str], device: str) -> None:
        self._process = subprocess.Popen(
            ["parec", f"--device={device}", f"--rate={RATE}", "--channels=1", "--format=s16le",
             "--latency-msec=10", "--raw"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._chunks: list[bytes] = []
        self._offset = float("inf")  # time.monotonic() of sample 0: the earliest any read allows
        self._size = 0
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        while chunk := os.read(fd, 65536):
            arrived = time.monotonic()
            with self._lock:
                self._chunks.append(chunk)
                self._size += len(chunk)
                # the last sample of this read was captured no later than it arrived; the
                # read that waited least gives the best estimate of when sample 0 was
                self._offset = min(self._offset, arrived - self._size / 2 / RATE)

    def started(self) -> bool:
        with self._lock:
            return self._size > 0

    def samples(self) -> np.ndarray:
        with self._lock:
            data = b"".join(self._chunks)
        return np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0

    def time_of(self, sample: int) -> float:
        """When sample ``sample`` played into the sink (time.monotonic())."""
        return self._offset + sample / RATE

    def sample_at(self, moment: float) -> int:
        return max(0, int(round((moment - self._offset) * RATE)))

    def quiet_since(self, seconds: float, threshold: float = 0.003) -> bool:
        """Nothing louder than ``threshold`` in the last ``seconds`` received."""
        tail = self.samples()[-int(seconds * RATE):]
        return len(tail) >= int(seconds * RATE) and float(np.max(np.abs(tail), initial=0.0)) < threshold

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(10)
        self._reader.join(5)


class VirtualCard:
    """``with VirtualCard(directory) as card:`` a running server; ``card.env`` is the
    environment a client (``robot run``) needs to use it."""

    def __init__(self, directory: Path) -> None:
        if not shutil.which("pulseaudio"):
            raise RuntimeError("pulseaudio is missing: run `bash scripts/setup.sh --test`")
        socket = Path(directory) / "native"
        self.env = {**os.environ, "PULSE_SERVER": f"unix:{socket}", "HOME": str(directory)}
        self._socket = socket
        self._server: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> VirtualCard:
        self._server = subprocess.Popen(
            ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
             "-L", f"module-native-protocol-unix auth-anonymous=1 socket={self._socket}",
             "-L", "module-null-sink sink_name=speaker"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not self._socket.exists():
            if time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("pulseaudio did not start")
            time.sleep(0.1)
        for cmd in (["load-module", "module-null-sink", "sink_name=mic_feed", f"rate={RATE}", "channels=1"],
                    ["set-default-source", "mic_feed.monitor"], ["set-default-sink", "speaker"]):
            subprocess.run(["pactl", *cmd], env=self.env, check=True, capture_output=True)
        return self

    def __exit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.terminate()
            self._server.wait(10)

    def echo(self, gain_db: float = -6.0, latency_ms: int = 60) -> None:
        """The loudspeaker heard by the microphone, as in a room: what sink ``speaker`` plays
        goes on into ``mic_feed``, ``gain_db`` down and about ``latency_ms`` late."""
        subprocess.run(["pactl", "load-module", "module-loopback", "source=speaker.monitor", "sink=mic_feed",
                        f"latency_msec={latency_ms}", "source_dont_move=true", "sink_dont_move=true"],
                       env=self.env, check=True, capture_output=True)
        inputs = subprocess.run(["pactl", "list", "short", "sink-inputs"], env=self.env, check=True,
                                capture_output=True, text=True).stdout.splitlines()
        loop = next(line.split()[0] for line in inputs if "module-loopback" in line)  # its stream into mic_feed
        volume = round(65536 * (10 ** (gain_db / 20)) ** (1 / 3))  # PulseAudio's volume is cubic in amplitude
        subprocess.run(["pactl", "set-sink-input-volume", loop, str(volume)], env=self.env, check=True)

    def play(self, wav: Path) -> None:
        """Say ``wav`` into the microphone; returns once it has played."""
        subprocess.run(["paplay", "--device=mic_feed", str(wav)], env=self.env, check=True)

    def record(self, sink: str) -> MonitorRecording:
        """What sink ``sink`` (``mic_feed`` or ``speaker``) plays from now on."""
        return MonitorRecording(self.env, f"{sink}.monitor")
