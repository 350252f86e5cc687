# Shared apt logic for simdesign's set-up scripts (sourced, not run).
#
#   source scripts/lib/apt.sh
#   PREFIX=setup apt_ensure pkg1 pkg2 ...
#
# Installs the Debian packages that are not installed yet with
# `apt-get install -y --no-install-recommends`, as root or through passwordless sudo; when the
# install fails with the current package lists (a fresh machine has none), runs `apt-get update`
# once and retries. Returns non-zero, after printing why, when it cannot install them.

apt_say() { echo "[${PREFIX:-setup}] $*"; }
apt_err() { echo "[${PREFIX:-setup}] ERROR: $*" >&2; }

apt_missing() {
  local pkg status
  for pkg in "$@"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    [ "$status" = "installed" ] || echo "$pkg"
  done
}

apt_as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    return 126
  fi
}

apt_ensure() {
  command -v dpkg-query >/dev/null 2>&1 || { apt_err "not a Debian-like system (no dpkg-query): install $* by hand"; return 1; }
  local missing still rc=0
  mapfile -t missing < <(apt_missing "$@")
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || { apt_err "missing Debian packages ${missing[*]} and no apt-get"; return 1; }
  apt_say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_as_root apt-get install -y --no-install-recommends "${missing[@]}" || rc=$?
  if [ "$rc" -ne 0 ]; then
    if [ "$rc" -eq 126 ]; then
      apt_err "installing ${missing[*]} needs root (run as root or with passwordless sudo)"
      return 1
    fi
    apt_say "apt-get install failed with the current package lists; running apt-get update and retrying"
    apt_as_root apt-get update || { apt_err "apt-get update failed"; return 1; }
    apt_as_root apt-get install -y --no-install-recommends "${missing[@]}" ||
      { apt_err "apt-get install ${missing[*]} failed"; return 1; }
  fi
  mapfile -t still < <(apt_missing "$@")
  [ "${#still[@]}" -eq 0 ] || { apt_err "still missing after apt-get: ${still[*]}"; return 1; }
}
