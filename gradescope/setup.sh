#!/usr/bin/env bash
# Gradescope autograder set-up (runs once when the autograder image is built).
# Zip this repository's contents (with this file at gradescope/setup.sh) and upload it as the
# autograder; Gradescope runs /autograder/source/setup.sh, so copy this file there:
#   cp gradescope/setup.sh setup.sh && cp gradescope/run_autograder run_autograder
set -euo pipefail
cd /autograder/source
apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install --quiet -e .
