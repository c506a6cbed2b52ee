# What bench/compare and bench/scale install before they run (sourced by both): Mosquitto and its
# command-line clients (apt-get, with sudo when not root), side virtualenvs under .bench/ for
# what must not mix with relaymq's own (amqtt, matplotlib), and relaymq's virtualenv.
source "$(dirname "${BASH_SOURCE[0]}")/../bin/_env.sh"
BENCH_DIR="$ROOT/.bench"
AMQTT_VENV="$BENCH_DIR/amqtt-venv"
PLOT_VENV="$BENCH_DIR/plot-venv"
# amqtt's configuration format changes between minor versions; this is the one compare_brokers.py writes.
AMQTT_SPEC="amqtt>=0.12,<0.13"

ensure_mosquitto() {
  local missing=()
  [ -x "${RELAYMQ_MOSQUITTO:-/usr/sbin/mosquitto}" ] || missing+=(mosquitto)
  command -v mosquitto_pub >/dev/null 2>&1 || missing+=(mosquitto-clients)
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "bench: installing Debian packages: ${missing[*]}" >&2
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

ensure_side_venv() {  # $1: directory, $2: modules that prove it complete, rest: pip specs
  local dir="$1" probe="$2"
  shift 2
  [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import $probe" 2>/dev/null && return 0
  echo "bench: installing $* into $dir" >&2
  mkdir -p "$BENCH_DIR"
  if [ ! -x "$dir/bin/python" ]; then
    ensure_python_venv && "$PY" -m venv "$dir" >&2 || return 1
  fi
  "$dir/bin/python" -m pip install -q --upgrade pip >&2 \
    && "$dir/bin/python" -m pip install -q "$@" >&2
}

venv_serves() {  # .venv is current with pyproject.toml and has the "fast" extra (uvloop), whatever
  # else bin/test or bin/relaymq installed: then leave it alone (others may be using it)
  local stamp="$VENV/.relaymq-installed" hash
  hash="$(sha256sum < "$ROOT/pyproject.toml" | cut -c1-16)"
  [ -x "$VENV/bin/python" ] && grep -Eq -- "^$hash-(.*,)?fast(,.*)?$" "$stamp" 2>/dev/null
}


ensure_plot_venv() {  # matplotlib for the charts; prints nothing, returns non-zero when it cannot
  ensure_side_venv "$PLOT_VENV" matplotlib matplotlib
}
