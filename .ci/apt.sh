# Sourced by the .ci scripts that install Debian packages. apt_get runs apt-get non-interactively and, when another
# apt-get or dpkg holds its lock (a second `make dev` or `make test` set-up started at the same time,
# unattended-upgrades), says so once and waits for it (up to 10 minutes) instead of failing: apt-get's own
# DPkg::Lock::Timeout covers dpkg's lock but not the package lists' lock that `apt-get update` takes.
# ${SUDO:-} prefixes it (node.sh runs as any user).
apt_get() {
  local err rc start=$SECONDS said=""
  err=$(mktemp)
  while :; do
    rc=0
    ${SUDO:-} env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@" 2>"$err" || rc=$?
    if [ "$rc" -ne 0 ] && grep -q 'Could not get lock' "$err" && [ $((SECONDS - start)) -lt 600 ]; then
      if [ -z "$said" ]; then
        echo "apt-get: another apt-get or dpkg is running ($(grep -o 'held by process [0-9]* ([^)]*)' "$err" | head -n 1)); waiting for it to finish"
        said=1
      fi
      sleep 2
      continue
    fi
    cat "$err" >&2
    rm -f "$err"
    return "$rc"
  done
}
