# Shared by bin/relaymq and bin/test: make sure the virtual environment exists and matches
# pyproject.toml, installing what is missing. Sourced, not run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"

ensure_venv() {  # $1: pip extras, e.g. "fast" or "test,fast,spark"
  # The stamp holds pyproject.toml's hash, then the extras installed with it. Asking for extras
  # that are already there installs nothing, so bin/relaymq (fast) and bin/test (test,fast,spark)
  # share one environment instead of reinstalling it in turn.
  local stamp="$VENV/.relaymq-installed"
  local hash installed=() wanted=() missing=0 extra
  hash="$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
  IFS=, read -r -a wanted <<< "$1"
  if [ ! -x "$VENV/bin/python" ]; then
    ensure_python_venv
    echo "relaymq: creating virtual environment in $VENV" >&2
    "$PY" -m venv "$VENV"
  fi
  if [ -f "$stamp" ] && [ "$(head -n1 "$stamp")" = "$hash" ]; then
    mapfile -t installed < <(tail -n +2 "$stamp")
  fi
  for extra in "${wanted[@]}"; do
    printf '%s\n' "${installed[@]}" | grep -qx -- "$extra" || missing=1
  done
  [ "$missing" -eq 0 ] && [ -f "$stamp" ] && return 0
  local all
  all="$(printf '%s\n' "${installed[@]}" "${wanted[@]}" | grep -v '^$' | sort -u | paste -sd, -)"
  echo "relaymq: installing relaymq[$all] into $VENV" >&2
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2
  "$VENV/bin/python" -m pip install -q -e "$ROOT[$all]" >&2
  { echo "$hash"; tr , '\n' <<< "$all"; } > "$stamp"
}

ensure_native() {  # the hot modules compiled with mypyc (relaymq.native_build), after installing
  # Quick when the build matches the sources (it hashes them), and quiet without a C compiler or
  # Python's headers: relaymq then runs as pure Python and says so at start. Never fails the set-up.
  "$VENV/bin/python" -m relaymq.native_build >&2 || echo "relaymq: compiling skipped; running pure Python" >&2
}

apt_install() {  # Debian packages, with sudo when not root
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "relaymq: installing Debian packages: $*" >&2
  $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
}

ensure_python_venv() {  # `python3 -m venv` needs ensurepip, which Debian ships apart in python3-venv
  "$PY" -c "import ensurepip, venv" >/dev/null 2>&1 && return 0
  echo "relaymq: $PY has no ensurepip" >&2
  apt_install python3-venv
}

# What bin/test needs from Debian, found missing in one pass and installed with one
# `apt-get update` and one `apt-get install` (each update costs a fresh machine seconds):
# - mosquitto-clients and mosquitto: the command-line MQTT clients the interoperability tests
#   drive, and the reference broker, the remote end of the bridge tests (tests/network);
# - nftables: the packet loss of the multicast tests (tests/multicast; tc netem needs sch_netem,
#   which not every kernel has);
# - nodejs and npm: to install rhea, the npm AMQP 1.0 client the AMQP listener tests drive;
# - rabbitmq-server: an outside AMQP 1.0 JMS provider for the JMS flow node tests (they start
#   their own node);
# - openjdk-17-jre-headless: the Spark tests (the spark extra: PySpark 4) need Java 17 or newer;
# - chromium: the web console's browser tests drive it through Playwright.
missing_test_packages() {  # prints the missing package names (white-space separated)
  command -v mosquitto_pub >/dev/null 2>&1 || echo mosquitto-clients
  [ -x /usr/sbin/mosquitto ] || command -v mosquitto >/dev/null 2>&1 || echo mosquitto
  command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || echo nftables
  [ -d "$ROOT/tests/amqp/rhea/node_modules/rhea" ] || command -v npm >/dev/null 2>&1 || echo nodejs npm
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || echo rabbitmq-server
  java_at_least_17 || { echo "relaymq: Spark needs Java 17 or newer (found: $(java_major || echo none))" >&2
                        echo openjdk-17-jre-headless; }
  command -v chromium >/dev/null 2>&1 || echo chromium
}

ensure_test_packages() {
  local missing=()
  mapfile -t missing < <(missing_test_packages | tr ' ' '\n')
  [ ${#missing[@]} -eq 0 ] && return 0
  # The RabbitMQ tests start their own node on loopback ports; Debian's service (every
  # interface, 5672) must not start on install: a policy-rc.d that denies it, unless the
  # machine has one.
  local policy=/usr/sbin/policy-rc.d made=""
  if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made=1
  fi
  apt_install "${missing[@]}"
  [ -n "$made" ] && rm -f "$policy"
  return 0
}

java_major() {  # the major version of `java` on the PATH (8 for 1.8), or nothing
  java -version 2>&1 | sed -n 's/.*version "\(1\.\)\{0,1\}\([0-9]*\).*/\2/p' | head -n1
}

java_at_least_17() {
  local major
  major="$(java_major || true)"
  [ -n "$major" ] && [ "$major" -ge 17 ]
}

ensure_node_packages() {  # rhea, from npm (npm itself comes with ensure_test_packages)
  local dir="$ROOT/tests/amqp/rhea"
  [ -d "$dir/node_modules/rhea" ] && return 0
  echo "relaymq: installing the npm packages of $dir" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --silent) >&2
}
