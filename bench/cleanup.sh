#!/bin/sh
# Undo whatever a benchmark run left under its work dir: mounts (deepest first), loop
# devices backed by files there, daemons it recorded, then the dir itself. Safe to run twice.
set -u
work=${1:?usage: cleanup.sh WORKDIR}
[ -d "$work" ] || exit 0
case "$work" in /dev/shm/cairn-bench.*) ;; *) echo "cleanup: refusing $work" >&2; exit 2 ;; esac

# loop devices first: they hold files of the delayfs mount
losetup -n -O NAME,BACK-FILE -l 2>/dev/null | while read -r dev file; do
  case "$file" in "$work"/*) umount "$dev" 2>/dev/null; losetup -d "$dev" 2>/dev/null ;; esac
done
# mounts under the work dir, longest path first
awk -v w="$work/" 'index($5, w) == 1 { print length($5), $5 }' /proc/self/mountinfo |
  sort -rn | cut -d' ' -f2- | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
losetup -n -O NAME,BACK-FILE -l 2>/dev/null | while read -r dev file; do
  case "$file" in "$work"/*) losetup -d "$dev" 2>/dev/null ;; esac
done
# daemons this run started (their pids only)
if [ -f "$work/pids" ]; then
  while read -r pid; do
    kill "$pid" 2>/dev/null
  done < "$work/pids"
fi
if awk -v w="$work/" 'index($5, w) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
  echo "cleanup: mounts left under $work" >&2
  exit 1
fi
rm -rf "$work"
