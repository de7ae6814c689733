# shellcheck shell=bash
# Shared helpers for Hairpin's test scripts: unique names and an exit-time cleanup stack.
# Source it; it defines functions only (and the HP_CLEANUP array).

HP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The repository root, for the scripts that source this file.
export HP_REPO
HP_REPO=$(cd "$HP_LIB_DIR/../.." && pwd)
HP_CLEANUP=()

hp_log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
hp_die() { hp_log "error: $*"; exit 1; }

# A short prefix unique on this machine, for namespaces and OVS instances ("hp" + 4 hex digits).
hp_unique_prefix() {
    local prefix
    while :; do
        prefix=$(printf 'hp%04x' $((RANDOM % 65536)))
        if ! ip netns list | grep -q "^${prefix}"; then
            printf '%s\n' "$prefix"
            return
        fi
    done
}

# Register a command to run at exit. Commands run in reverse order (last registered, first run).
hp_on_exit() { HP_CLEANUP+=("$*"); }

hp_run_cleanup() {
    local i
    trap - EXIT INT TERM
    for ((i = ${#HP_CLEANUP[@]} - 1; i >= 0; i--)); do
        eval "${HP_CLEANUP[$i]}" || true
    done
    HP_CLEANUP=()
}

# Install the trap that runs the cleanup stack on exit, Ctrl-C and SIGTERM.
hp_install_cleanup_trap() {
    trap hp_run_cleanup EXIT
    trap 'hp_run_cleanup; exit 130' INT
    trap 'hp_run_cleanup; exit 143' TERM
}

hp_require_root() { [[ $EUID -eq 0 ]] || hp_die "must run as root (network namespaces)"; }

# Wait until COMMAND succeeds, polling every 0.1 s, for at most SECONDS.
hp_wait_for() {
    local seconds=$1
    shift
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || return 1
        sleep 0.1
    done
}
