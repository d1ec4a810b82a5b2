#!/bin/sh
# scripts/deps.sh: the test list holds every package the tests need (the HTTP,
# TLS and ACL tools too), and run by a user who cannot install, it names what is
# missing and the command that installs it, and fails (so make test stops there).
. "$(dirname "$0")/common.inc"
list=$("$ROOT/scripts/deps.sh" --list test) || fail "deps.sh --list test"
for p in libfuse3-dev libcmocka-dev pkg-config qemu-utils acl libcurl4-openssl-dev libssl-dev \
         nginx-light squid openssl curl stress-ng fio rsync; do
  printf '%s\n' "$list" | grep -qx "$p" || fail "deps.sh test does not install $p"
done

# A dpkg-query that reports squid as not installed, and deps.sh run as nobody.
command -v setpriv >/dev/null 2>&1 || skip "no setpriv"
[ "$(id -u)" -eq 0 ] || skip "needs root to run deps.sh as another user"
chmod 755 "$WORK"
mkdir -p "$WORK/bin"
cat > "$WORK/bin/dpkg-query" <<'EOS'
#!/bin/sh
for a; do last=$a; done
[ "$last" = squid ] && exit 1
printf 'install ok installed'
EOS
cp "$ROOT/scripts/deps.sh" "$WORK/deps.sh"
chmod 755 "$WORK/bin/dpkg-query" "$WORK/deps.sh"
if setpriv --reuid=nobody --regid=nogroup --clear-groups env PATH="$WORK/bin:$PATH" \
     "$WORK/deps.sh" test > "$WORK/out" 2>&1; then
  cat "$WORK/out"; fail "deps.sh succeeded as nobody with squid missing"
fi
cat "$WORK/out"
grep -q 'missing.*squid' "$WORK/out" || fail "deps.sh does not name the missing package"
grep -q 'apt-get install.* squid' "$WORK/out" || fail "deps.sh does not say how to install it"
echo "deps: ok"
