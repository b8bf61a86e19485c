#!/usr/bin/env bash
# Runs the whole test suite (installs what is missing first). Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")"
bash scripts/install.sh || exit 1
.venv/bin/pytest -ra "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
