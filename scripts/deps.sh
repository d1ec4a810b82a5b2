#!/bin/sh
# Install the Debian packages cairn needs to build, test, benchmark and demo.
#   scripts/deps.sh [test|bench]         install what is missing (as root), or,
#                                        as another user, say what is missing and
#                                        how to install it (exit 1)
#   scripts/deps.sh --list [test|bench]  print the package list
# Every tool and library the tests use is here, so `make test` works the first
# time on a machine that has none of them.
set -eu

list=0
[ "${1:-}" = "--list" ] && { list=1; shift; }
PKGS="build-essential clang pkg-config libxxhash-dev libzstd-dev liblz4-dev zlib1g-dev \
libcmocka-dev libfuse3-dev fuse3 attr acl python3 libclang-rt-14-dev openjdk-17-jdk-headless \
libcap2-bin libcurl4-openssl-dev libssl-dev strace"
case "${1:-}" in
  bench) PKGS="$PKGS squashfs-tools squashfuse erofs-utils fuse-overlayfs fio gnuplot-nox \
qemu-utils python3 default-jdk-headless nginx-light curl" ;;
  # remote-image tests: nginx (origin), squid (caching proxy), openssl (a
  # self-signed certificate), curl (uploads to s3rver), node + npm (s3rver,
  # installed by the test itself; Debian's only when no npm is there, as
  # another node may bring its own); the tools tests/mount/stress.sh,
  # roundtrip.sh, workloads.sh and hostile.sh (dbench, fsmark; bonnie++ for
  # tests/stress-long.sh) run on the mounts.
  test) PKGS="$PKGS qemu-utils nginx-light squid openssl curl stress-ng fio rsync tar git \
dbench fsmark bonnie++"
        command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm" ;;
esac
if [ "$list" -eq 1 ]; then
  printf '%s\n' $PKGS
  exit 0
fi

missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing Debian packages:$missing" >&2
  echo "deps: install them as root, then run make again:" >&2
  echo "  sudo apt-get install --no-install-recommends$missing" >&2
  exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
