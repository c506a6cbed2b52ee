# Shared by bin/relaymq and bin/test: make sure the virtual environment exists and matches
# pyproject.toml, installing what is missing. Sourced, not run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"

ensure_venv() {  # $1: pip extras, e.g. "fast" or "test,fast"
  local extras="$1"
  local stamp="$VENV/.relaymq-installed"
  local want
  want="$(cat "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)-$extras"
  if [ ! -x "$VENV/bin/python" ]; then
    ensure_python_venv
    echo "relaymq: creating virtual environment in $VENV" >&2
    "$PY" -m venv "$VENV"
  fi
  if [ ! -f "$stamp" ] || ! grep -qx -- "$want" "$stamp" 2>/dev/null; then
    echo "relaymq: installing relaymq[$extras] into $VENV" >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >&2
    "$VENV/bin/python" -m pip install -q -e "$ROOT[$extras]" >&2
    echo "$want" > "$stamp"
  fi
}

ensure_python_venv() {  # `python3 -m venv` needs ensurepip, which Debian ships apart in python3-venv
  "$PY" -c "import ensurepip, venv" >/dev/null 2>&1 && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "relaymq: $PY has no ensurepip; installing Debian package python3-venv" >&2
  $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >&2
}

ensure_debian_packages() {  # the command-line MQTT clients the interoperability tests drive
  local missing=()
  command -v mosquitto_pub >/dev/null 2>&1 || missing+=(mosquitto-clients)
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "relaymq: installing Debian packages: ${missing[*]}" >&2
  $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}
