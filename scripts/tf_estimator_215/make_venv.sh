#!/usr/bin/env bash
# Creates the tf.estimator 2.15 reference environment: a virtual environment
# with tensorflow-cpu 2.15.1 and tensorflow-estimator 2.15.0, the last
# TensorFlow that ships tf.estimator.
#
# Usage: scripts/tf_estimator_215/make_venv.sh [DIR]
#   DIR defaults to .venv-tf215 at the repository root.
#
# It is made on demand only (the fixture script, the legacy-program
# comparison, the benchmark's tf.estimator peer and run_own_tests.py --215
# use it); `make test` never builds it. Running it again is cheap: a complete
# environment (marked by a stamp file holding the pinned requirements) is
# left as it is.
#
# Interpreter: TensorFlow 2.15.1 has wheels for CPython 3.9-3.11 only. The
# first of $PYTHON, python3.11, python3.10, python3.9, python3 whose version
# is in that range is used; if none is, the script says so and stops rather
# than guessing another route.
set -euo pipefail

readonly REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly VENV_DIR="${1:-${REPO_ROOT}/.venv-tf215}"
readonly STAMP="${VENV_DIR}/.tf_estimator_215_installed"
# numpy<2: TensorFlow 2.15's wheels are built against numpy 1.x, and pip would
# otherwise be free to pick numpy 2 for packages installed later.
readonly REQUIREMENTS="tensorflow-cpu==2.15.1 tensorflow-estimator==2.15.0 numpy<2"
# What tf.estimator 2.15's own tests need besides (run_own_tests.py --215):
# pytest runs them, pandas_io's tests and kmeans_test import pandas and
# scikit-learn (versions that still support numpy 1.x). Installed on top,
# with a stamp of their own, so that an environment made before them is
# completed rather than rebuilt.
readonly TEST_REQUIREMENTS="pytest pandas<2.3 scikit-learn<1.6"
readonly TEST_STAMP="${VENV_DIR}/.tf_estimator_215_test_installed"

start_seconds=${SECONDS}

install_test_requirements() {
  if [[ -f "${TEST_STAMP}" && "$(cat "${TEST_STAMP}")" == "${TEST_REQUIREMENTS}" ]]; then
    return 0
  fi
  # shellcheck disable=SC2086  # the requirements are meant to split into words
  "${VENV_DIR}/bin/python" -m pip install --quiet ${TEST_REQUIREMENTS} "numpy<2"
  echo "${TEST_REQUIREMENTS}" > "${TEST_STAMP}"
}

if [[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${REQUIREMENTS}" ]]; then
  install_test_requirements
  echo "tf.estimator 2.15 environment already complete: ${VENV_DIR}"
  echo "took $((SECONDS - start_seconds)) s"
  exit 0
fi

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.11 python3.10 python3.9 python3; do
    [[ -n "${candidate}" ]] || continue
    command -v "${candidate}" > /dev/null 2>&1 || continue
    if "${candidate}" -c \
        'import sys; sys.exit(0 if (3, 9) <= sys.version_info[:2] <= (3, 11) else 1)'; then
      echo "${candidate}"
      return 0
    fi
  done
  return 1
}

if ! python_bin="$(find_python)"; then
  echo "error: TensorFlow 2.15.1 needs CPython 3.9, 3.10 or 3.11; none was found" \
       "(set PYTHON=/path/to/python3.11)" >&2
  exit 2
fi
echo "Creating ${VENV_DIR} with $("${python_bin}" --version 2>&1) (${python_bin})"

# A half-made environment from an interrupted run is rebuilt from scratch.
rm -f "${STAMP}" "${TEST_STAMP}"
"${python_bin}" -m venv --clear "${VENV_DIR}"
"${VENV_DIR}/bin/python" -m pip install --quiet --upgrade pip
# shellcheck disable=SC2086  # the requirements are meant to split into words
"${VENV_DIR}/bin/python" -m pip install --quiet ${REQUIREMENTS}

# Proves the environment works, and shows the versions it really holds.
TF_CPP_MIN_LOG_LEVEL=2 "${VENV_DIR}/bin/python" - <<'EOF'
import sys
from importlib import metadata
import tensorflow as tf
print('python', sys.version.split()[0], '| tensorflow', tf.__version__,
      '| tensorflow-estimator', metadata.version('tensorflow-estimator'),
      '| keras', metadata.version('keras'), '| numpy', metadata.version('numpy'),
      '| tf.estimator.Estimator from', tf.estimator.Estimator.__module__)
EOF

echo "${REQUIREMENTS}" > "${STAMP}"
install_test_requirements
echo "tf.estimator 2.15 environment ready: ${VENV_DIR} ($(du -sh "${VENV_DIR}" | cut -f1))"
echo "took $((SECONDS - start_seconds)) s"
