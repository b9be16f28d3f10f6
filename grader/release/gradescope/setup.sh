#!/usr/bin/env bash
# Gradescope autograder set-up: runs once, when Gradescope builds the autograder image, from
# the bundle `grade release --gradescope` wrote (unzipped in /autograder/source).
set -euo pipefail
ROOT=${AUTOGRADER_ROOT:-/autograder}
cd "$ROOT/source"
# a Python the grader supports (3.11+): the image's own, else Ubuntu's python3.11
PY=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && \
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    PY=$(command -v "$candidate"); break
  fi
done
# Gradescope's base images: Ubuntu 22.04 has python3.11 in its archive, 24.04 has 3.12 as its
# python3; 20.04 and 18.04 have neither, and this script stops there with one clear line
# rather than a half-installed environment.
if [ -z "$PY" ]; then
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 python3.11-venv \
    >/dev/null 2>&1 || true
  PY=$(command -v python3.11 || true)
fi
if [ -z "$PY" ]; then
  echo "autograder setup: this image has no Python 3.11 or newer (needed by the grader);" \
       "choose Gradescope's Ubuntu 22.04 or 24.04 base image" >&2
  exit 1
fi
if ! "$PY" -m venv "$ROOT/venv" >/dev/null 2>&1; then  # Ubuntu ships venv apart
  rm -rf "$ROOT/venv"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$(basename "$PY")-venv" \
    >/dev/null 2>&1 || true
  "$PY" -m venv "$ROOT/venv" || {
    echo "autograder setup: $PY cannot make a venv (its $(basename "$PY")-venv package)" >&2
    exit 1
  }
fi
"$ROOT/venv/bin/python" -m pip install --quiet --upgrade pip
# torch only when an exercise of the bundle needs it, first and pinned, from the CPU wheels (a
# bare requirement would pull a CUDA build); GRADER_TORCH_INDEX="" takes it from pip's own
# configuration (an offline mirror, a test)
if "$PY" -m grader.catalog needs-torch; then
  TORCH_INDEX=${GRADER_TORCH_INDEX-https://download.pytorch.org/whl/cpu}
  "$ROOT/venv/bin/python" -m pip install --quiet torch==2.13.0 \
    ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
fi
"$ROOT/venv/bin/python" -m pip install --quiet .
