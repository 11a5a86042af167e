"""Audio in and out: wav files, in-memory streams, sound devices, and resampling.

Sources yield 20 ms frames of 16 kHz mono int16 (see speech.types); sinks play SpeechAudio."""

from speech.audio.device_sink import SoundDeviceSink
from speech.audio.device_source import SoundDeviceSource
from speech.audio.devices import list_devices
from speech.audio.file_source import WavFileSource
from speech.audio.pcm import FrameBuffer, float_to_pcm, mix_under, pcm_to_float, rms, silence, split_frames
from speech.audio.queue_source import QueueSource
from speech.audio.resample import StreamResampler, resample, resample_pcm, resample_speech
from speech.audio.sinks import NullSink, WavSink
from speech.audio.wavio import read_pcm16, read_wav, read_wav_16k_mono, write_wav

__all__ = [
    "FrameBuffer",
    "NullSink",
    "QueueSource",
    "SoundDeviceSink",
    "SoundDeviceSource",
    "StreamResampler",
    "WavFileSource",
    "WavSink",
    "float_to_pcm",
    "mix_under",
    "list_devices",
    "pcm_to_float",
    "read_pcm16",
    "read_wav",
    "read_wav_16k_mono",
    "resample",
    "resample_pcm",
    "resample_speech",
    "rms",
    "silence",
    "split_frames",
    "write_wav",
]
