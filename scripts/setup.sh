#!/usr/bin/env bash
# Installs everything omnic builds and tests with, from Debian's packages and (for the
# test oracles) the npm registry via tests/oracle/package-lock.json. Idempotent: runs
# apt-get only when a package is missing, npm only when node_modules is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build: compiler, CMake, pkg-config; jansson (JSON), OpenBLAS (f32 GEMM), cmocka (unit tests),
# PCRE2 (tokenizer pre-tokenizer regexes), utf8proc (Unicode normalization), libmicrohttpd
# (the HTTP server), curl (end-to-end tests of the server), libcurl (opt-in fetching of remote
# images for allow-listed hosts), libjpeg-turbo / libpng / libwebp
# (image decode in src/mm), libsndfile / libsoxr / FFTW3 (audio decode, resampling and log-mel
# features in src/mm).
# Deployment: nginx (the load balancer of docs/deploy.md; tests/e2e/test_replicas.sh runs it on
# loopback ports of its own; Debian's package may start its default site on port 80).
# Test and tools: numpy (tiny checkpoints, reference implementations), Pillow (reference image
# preprocessing in the image e2e test), clang + its runtime and clang-format (the format check)
# (libFuzzer targets), Node.js + npm (oracles: HF tokenizers, @huggingface/jinja, openai).
PACKAGES=(
  build-essential cmake pkg-config
  libjansson-dev libopenblas-dev libcmocka-dev
  libpcre2-dev libutf8proc-dev
  libmicrohttpd-dev curl libcurl4-openssl-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev
  libsndfile1-dev libsoxr-dev libfftw3-dev
  python3 python3-numpy python3-pil time
  clang libclang-rt-14-dev clang-format
  nginx
)
# Node.js: any install that provides node and npm will do (some images ship a nodejs
# package that bundles npm and conflicts with Debian's npm package).
command -v node >/dev/null && command -v npm >/dev/null || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Oracles from the committed lockfile; reinstall only when the lockfile changed.
stamp=tests/oracle/node_modules/.omnic-lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s tests/oracle/package-lock.json "$stamp"; then
  echo "setup: installing test oracles (npm ci)"
  (cd tests/oracle && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp tests/oracle/package-lock.json "$stamp"
fi
