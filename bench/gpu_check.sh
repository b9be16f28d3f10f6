#!/usr/bin/env bash
# The GPU checks, run by hand on a machine with CUDA (one short run; see README "GPU").
# Grades the references of every exercise on --device cuda inside the sandbox, a learner
# PatchViT that returns its output on the wrong device, and the torch exercises' project
# tests. Writes the reports and a log under ${OUT:-/tmp/gpu-check}. On a machine where the
# project is not installed it installs it (editable, no dependencies) so that `grade` exists.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
{
  nvidia-smi -L
  $PY -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())"
  $PY -m grader doctor
  [ -x "$(dirname "$($PY -c 'import sys; print(sys.executable)')")/grade" ] || \
    $PY -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
  echo "== which confinement layer lets CUDA start"
  $PY bench/gpu_diagnose.py
  # the device reaches no registry: carry the two pure-Python wheels, made here with
  # `pip download --no-deps -d bench/wheels pyseccomp nvidia-ml-py`, and set WHEELS=bench/wheels
  if [ -n "${WHEELS:-}" ]; then $PY -m pip install -q --no-index --find-links "$WHEELS" pyseccomp nvidia-ml-py 2>&1 | tail -2; fi
  $PY -c "import pyseccomp, pynvml" 2>&1 || echo "(pyseccomp / nvidia-ml-py missing: set WHEELS, or the level is basic)"
  echo "== every reference on cuda, at isolation strict (the seccomp allow-list's GPU profile)"
  $PY -m grader --submission solutions --device cuda --isolation strict --report-dir "$OUT/references" -q; echo "exit $?"
  $PY -c "import json; d=json.load(open('$OUT/references/results.json')); print('device:', d['isolation'].get('device'), 'level:', d['isolation'].get('level'))"
  echo "== seccomp: what CUDA workers call beyond the allow-list (GRADER_SECCOMP_LOG=1: logged, not refused)"
  # workers started with subprocess (the fork server does not see the variable): Python,
  # torch and CUDA all start under the filter, a superset of a forked worker's calls
  since=$(date +%s)
  GRADER_SECCOMP_LOG=1 GRADER_FORKSERVER=0 $PY -m grader --submission solutions --device cuda --isolation strict --report-dir "$OUT/seccomp-log" -q; echo "exit $?"
  sleep 1
  { dmesg 2>/dev/null; cat /var/log/audit/audit.log 2>/dev/null; } | $PY bench/gpu_diagnose.py --seccomp-log "$since"
  if command -v strace > /dev/null; then
    echo "== seccomp: refused calls of a CUDA patch_vit grading, enforced, under strace (ioctl requests included)"
    GRADER_FORKSERVER=0 strace -f -qq -o "$OUT/strace.txt" $PY -m grader --submission solutions patch_vit --device cuda --isolation strict --report-dir "$OUT/strace" -q; echo "exit $?"
    grep -E "= -1 (ENOSYS|EPERM|ENOTTY)" "$OUT/strace.txt" | grep -vE "^[0-9]+ +(ioctl\([0-9]+, TCGETS|prctl\(PR_CAPBSET)" | sed -E 's/^[0-9]+ +//; s/^(ioctl)\([0-9]+, (_IOC\([^)]*\)|[^,]*).*= -1 ([A-Z]+).*/\1 \2 \3/; s/^([a-z0-9_]+)\(.*= -1 ([A-Z]+).*/\1 \2/' | sort | uniq -c | sort -rn | head -40
  fi
  echo "== a PatchViT whose output stays on the CPU"
  mkdir -p "$OUT/wrong_device"
  sed "s/return self.encoder(tokens)$/return self.encoder(tokens).cpu()/" solutions/patch_vit.py > "$OUT/wrong_device/patch_vit.py"
  grep -c ".cpu()" "$OUT/wrong_device/patch_vit.py"
  $PY -m grader --submission "$OUT/wrong_device" patch_vit --device cuda --report-dir "$OUT/wrong" -q; echo "exit $?"
  $PY -c "import json; d=json.load(open('$OUT/wrong/results.json')); print([(t['name'], t['status'], t['message'][:160]) for t in d['exercises'][0]['tests'] if t['status'] != 'passed'][:3])"
  echo "== a PatchViT that fills 40 GB of host memory on a CUDA worker (no address-space cap)"
  mkdir -p "$OUT/memory_bomb"
  sed "s/return self.encoder(tokens)$/_ = torch.ones(10**10); return self.encoder(tokens)/" solutions/patch_vit.py > "$OUT/memory_bomb/patch_vit.py"
  $PY -m grader --submission "$OUT/memory_bomb" patch_vit --device cuda --report-dir "$OUT/bomb" -q; echo "exit $?"
  $PY -c "import json; d=json.load(open('$OUT/bomb/results.json')); print([(t['name'], t['status'], t['message'][:160]) for t in d['exercises'][0]['tests'] if t['status'] != 'passed'][:2])"
  echo "== project tests of the torch exercises, the sandbox and the hostile corpus"
  $PY -m pytest -q -p no:cacheprovider tests/test_exercise_patch_vit.py tests/test_exercise_shift_equivariance.py tests/test_sandbox.py tests/test_hostile.py tests/test_protocol.py -rfE > "$OUT/pytest.txt" 2>&1; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.txt"
} 2>&1 | tee "$OUT/log.txt"
