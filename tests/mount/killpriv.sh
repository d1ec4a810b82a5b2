#!/bin/sh
# FUSE_HANDLE_KILLPRIV_V2 on RAM files (tools/fuse/killpriv.c): the kernel asks for
# security.capability once per inode instead of on every write(2), so the daemon
# must drop file capabilities on write, truncate, O_TRUNC and chown, and clear
# set-user-ID on a write by another user with the change visible at once.
. "$(dirname "$0")/common.inc"
command -v setcap >/dev/null 2>&1 || skip "setcap not installed (libcap2-bin)"
command -v setpriv >/dev/null 2>&1 || skip "setpriv not installed"

M=$WORK/kp
mnt "$M" --empty || fail "mount --empty"
f=$M/f
printf x > "$f"
caps() { getcap "$f" 2>/dev/null | grep -c cap_net_raw; }
setcap cap_net_raw+ep "$f" || fail "setcap"
[ "$(caps)" = 1 ] || fail "setcap did not stick"
printf y >> "$f"; [ "$(caps)" = 0 ] || fail "write kept security.capability"
setcap cap_net_raw+ep "$f"; truncate -s 1 "$f"; [ "$(caps)" = 0 ] || fail "truncate kept it"
setcap cap_net_raw+ep "$f"; : > "$f"; [ "$(caps)" = 0 ] || fail "O_TRUNC kept it"
setcap cap_net_raw+ep "$f"; chown 1:1 "$f"; [ "$(caps)" = 0 ] || fail "chown kept it"
echo "security.capability dropped on write, truncate, O_TRUNC, chown: ok"

chmod 6775 "$f"
setpriv --reuid=1 --regid=1 --clear-groups sh -c "printf z >> '$f'" || fail "write as uid 1"
[ "$(stat -c %a "$f")" = 775 ] || fail "mode right after another user's write: $(stat -c %a "$f")"
echo "set-user-ID cleared and seen at once: ok"

# The point of it: 64 writes, at most a couple of GETXATTRs (fuse tracepoint).
T=/sys/kernel/tracing
if [ -w "$T/events/fuse/fuse_request_send/enable" ] && [ -w "$T/trace" ]; then
  g=$M/g; printf x > "$g"
  dev=$(stat -c %d "$M")
  echo "connection==$dev" > "$T/events/fuse/fuse_request_send/filter"
  echo > "$T/trace"
  echo 1 > "$T/events/fuse/fuse_request_send/enable"
  dd if=/dev/zero of="$g" bs=4096 count=64 2>/dev/null
  echo 0 > "$T/events/fuse/fuse_request_send/enable"
  echo 0 > "$T/events/fuse/fuse_request_send/filter"
  w=$(grep -c "connection $dev .*(FUSE_WRITE)" "$T/trace")
  x=$(grep -c "connection $dev .*(FUSE_GETXATTR)" "$T/trace")
  [ "$w" -ge 64 ] || fail "trace saw $w WRITEs for 64 writes"
  [ "$x" -le 2 ] || fail "$x GETXATTRs for 64 writes (expected at most 2)"
  echo "64 writes: $w WRITE, $x GETXATTR requests: ok"
else
  echo "no fuse tracepoint here: request counts not checked"
fi
umnt "$M" || fail "unmount"
