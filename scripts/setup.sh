#!/usr/bin/env bash
# Prepares a machine for Hairpin's tests and tools: Debian packages and the Python venvs.
# Idempotent: each step checks whether it is already done, so a warm run takes about a second.
# Never leaves a system Open vSwitch running: the tests start their own isolated instances.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$REPO/.venv
FAUCET_VENV=$REPO/.venv-faucet
# Faucet pins os-ken 3.1.0, so it lives in its own venv beside the main one (os-ken 3.1.1).
FAUCET_VERSION=1.10.12
SYSTEM_PYTHON=/usr/bin/python3

APT_PACKAGES=(
    openvswitch-switch openvswitch-testcontroller iperf3 netsniff-ng tcpdump
    clang libbpf-dev ethtool iproute2 iputils-ping procps util-linux linux-perf traceroute
    python3-venv python3-dev build-essential pkg-config shellcheck
    bubblewrap nats-server
)

log() { printf 'setup: %s\n' "$*" >&2; }

is_installed() { [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]; }

install_apt_packages() {
    local missing=() pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        is_installed "$pkg" || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    [[ $EUID -eq 0 ]] || { log "need root to install: ${missing[*]}"; exit 1; }
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The package's init script may have started the system instance; ours must run alone.
stop_system_ovs() {
    local pidfile
    for pidfile in /run/openvswitch/ovs-vswitchd.pid /run/openvswitch/ovsdb-server.pid; do
        if [[ -f $pidfile ]] && kill -0 "$(<"$pidfile")" 2>/dev/null; then
            log "stopping the system Open vSwitch"
            /usr/share/openvswitch/scripts/ovs-ctl stop >/dev/null 2>&1 || kill "$(<"$pidfile")"
        fi
    done
}

# ensure_venv DIR STAMP_TEXT PIP_ARGS...: (re)install into DIR unless its stamp says it is current.
ensure_venv() {
    local dir=$1 stamp_text=$2
    shift 2
    if [[ -f $dir/.hairpin-stamp && $(<"$dir/.hairpin-stamp") == "$stamp_text" ]]; then
        return 0
    fi
    log "preparing $dir"
    [[ -x $dir/bin/python ]] || "$SYSTEM_PYTHON" -m venv "$dir"
    if ! { "$dir/bin/pip" install --disable-pip-version-check --upgrade pip &&
        "$dir/bin/pip" install --disable-pip-version-check "$@"; } >"$dir/setup.log" 2>&1; then
        tail -n 30 "$dir/setup.log" >&2
        log "pip failed in $dir (full log: $dir/setup.log)"
        exit 1
    fi
    printf '%s' "$stamp_text" >"$dir/.hairpin-stamp"
}

install_apt_packages
stop_system_ovs
ensure_venv "$VENV" "$(sha256sum "$REPO/python/pyproject.toml" "${BASH_SOURCE[0]}")" \
    -e "$REPO/python[test,bench]"
ensure_venv "$FAUCET_VENV" "faucet==$FAUCET_VERSION" "faucet==$FAUCET_VERSION"
log "ready: $VENV (os-ken, pytest, ruff, scapy, matplotlib, nats-py, hairpin), $FAUCET_VENV (faucet)"
