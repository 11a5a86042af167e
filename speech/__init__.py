"""Audio in and out, VAD endpointing, speech-to-text and text-to-speech. Imports nothing of robot/ or memory/."""
