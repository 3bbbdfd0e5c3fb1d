#!/usr/bin/env bash
# apt-get "$@", waiting while another apt or dpkg (unattended upgrades, a second install) holds the
# package manager's lock, instead of failing at once. Any other failure is returned as it is.
# HOURTAB_APT_WAIT_S (default 600) bounds the wait; HOURTAB_APT_RETRY_S (default 5) spaces the tries.
set -uo pipefail
wait_s=${HOURTAB_APT_WAIT_S:-600}
retry_s=${HOURTAB_APT_RETRY_S:-5}
tries=$(( retry_s > 0 ? wait_s / retry_s : wait_s ))
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
for (( i = 0; ; i++ )); do
  # DPkg::Lock::Timeout makes apt itself wait for the dpkg lock; the loop also covers the lists lock.
  apt-get -o DPkg::Lock::Timeout="$retry_s" "$@" 2> "$errors"
  status=$?
  if [ $status -eq 0 ] || ! grep -qiE "could not get lock|unable to acquire the dpkg frontend lock|unable to lock" "$errors"; then
    cat "$errors" >&2
    exit $status
  fi
  if (( i >= tries )); then
    cat "$errors" >&2
    echo "Another package manager still holds the lock after ${wait_s} s; run this again once it has finished." >&2
    exit $status
  fi
  (( i == 0 )) && echo "Waiting for another package manager to release its lock…" >&2
  sleep "$retry_s"
done
