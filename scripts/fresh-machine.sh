#!/bin/sh
# Runs README's two commands the first time on a fresh Debian 12 machine, for
# real: a minimal bookworm root (debootstrap --variant=minbase, plus `make`, the
# one thing needed to type the command), a clean clone of this tree in it, and
# `make demo` or `make test` run as root in a chroot with /proc, /sys and /dev
# (so /dev/fuse) bound in. Every command gets a new root and a new clone, so
# scripts/deps.sh must install everything itself.
#   scripts/fresh-machine.sh [-r ROOT] [demo|test]...   (default: demo test)
# ROOT defaults to /var/tmp/cairn-fresh-root (one root at a time per ROOT; give
# each parallel run its own). The first run keeps the debootstrap result in
# ROOT.base.tar and later runs start from a copy of it (delete it to rebuild).
# Needs root and the network to the Debian mirror this machine's apt uses. It
# downloads about 1 GiB and `test` takes half an hour: it is not part of
# make test. Logs: ROOT.<command>.log; exit status: that of the last command.
set -eu
root=/var/tmp/cairn-fresh-root
if [ "${1:-}" = "-r" ]; then root=$2; shift 2; fi
[ $# -gt 0 ] || set -- demo test
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "fresh-machine: run as root (chroot, mounts)" >&2; exit 1; }
for c in "$@"; do
  case $c in demo|test) ;; *) echo "fresh-machine: unknown command $c" >&2; exit 2 ;; esac
done

# The mirror this machine's apt uses (deb822 URIs: or a one-line deb entry).
mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)$/\1/p' \
           /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' \
           /etc/apt/sources.list 2>/dev/null)
: "${mirror:=http://deb.debian.org/debian}"

unmount_root() {
  for m in "$root" "$root/dev" "$root/sys" "$root/proc"; do
    if mountpoint -q "$m"; then umount -R "$m" || umount -R -l "$m"; fi
  done
}
# Processes left running in the root (a daemon a test forgot) are ended, by pid.
stop_leftovers() {
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] || continue
    echo "fresh-machine: process ${p#/proc/} still runs in $root; ending it" >&2
    kill -9 "${p#/proc/}" 2>/dev/null || true
  done
}
cleanup() { stop_leftovers; unmount_root; }
trap cleanup EXIT
trap 'exit 130' INT TERM

base=$root.base.tar
if [ ! -s "$base" ]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  rm -rf "$root.base"
  echo "fresh-machine: debootstrap bookworm from $mirror" >&2
  debootstrap --variant=minbase bookworm "$root.base" "$mirror" > "$root.debootstrap.log" 2>&1 ||
    { tail -n 20 "$root.debootstrap.log"; exit 1; }
  tar -C "$root.base" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf "$root.base"
fi

# fresh_root: a new root from the base, with apt pointed at the same suites as
# here (updates and security too, as an installed machine has), no services
# started by package installs (the chroot shares this machine's network), and
# make installed. The root is a mount point, bound onto itself.
fresh_root() {
  unmount_root
  if awk -v r="$root" '$2 == r || index($2, r "/") == 1 { f = 1 } END { exit !f }' /proc/self/mounts; then
    echo "fresh-machine: something is still mounted under $root" >&2; return 1
  fi
  rm -rf --one-file-system "$root"
  mkdir -p "$root"
  tar -C "$root" -xf "$base"
  # This machine's network: its resolver, and the local CAs it trusts (a TLS
  # proxy on the way to the npm registry): ca-certificates takes them into the
  # bundle Debian's node uses when deps.sh installs it.
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
  cat > "$root/etc/apt/sources.list" <<EOS
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
EOS
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  # / is a mount point on a machine (unshare --propagation needs one), and a
  # private one here, so nothing mounted in the root shows up outside it.
  mount --bind "$root" "$root" && mount --make-private "$root"
  mount --bind /proc "$root/proc"
  mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
  mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
  in_root "apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null"
}

# in_root CMD: a root login shell's environment, nothing inherited from here.
in_root() {
  env -i HOME=/root TERM="${TERM:-dumb}" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    chroot "$root" /bin/sh -c "$1"
}

rc=0
for c in "$@"; do
  log=$root.$c.log
  echo "fresh-machine: new root $root for make $c (log $log)" >&2
  fresh_root > "$log" 2>&1 || { tail -n 20 "$log"; exit 1; }
  rm -rf "$root/root/cairn"
  git clone -q "$src" "$root/root/cairn"
  start=$(date +%s)
  rc=0
  in_root "cd /root/cairn && make $c" >> "$log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - start ))
  tail -n 15 "$log"
  echo "fresh-machine: make $c on a fresh root: exit $rc after ${secs} s" >&2
  stop_leftovers
  unmount_root
  [ "$rc" -eq 0 ] || break
done
exit "$rc"
