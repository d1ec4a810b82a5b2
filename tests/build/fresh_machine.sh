#!/bin/sh
# `make demo` and `make test` work the first time on a machine without the
# packages: the build must ask pkg-config only after scripts/deps.sh ran. Here
# a stand-in pkg-config says fuse3 is missing until a stand-in deps script has
# run (as on a fresh machine before apt-get), and `make -n` must show every
# compile of the FUSE daemon with fuse3's flags. Before the fix the Makefile
# read pkg-config when it started, and the daemon was compiled without them.
. "$(dirname "$0")/common.inc"
real=$(command -v pkg-config || true)
mkdir -p "$WORK/bin"
cat > "$WORK/bin/pkg-config" <<EOS
#!/bin/sh
case " \$* " in
  *" fuse3 "*)
    [ -e "$WORK/deps-ran" ] || exit 1
    case " \$* " in *" --cflags "*) echo -I/fresh-machine/fuse3 ;; *) echo -lfuse3 ;; esac
    exit 0 ;;
esac
[ -n "$real" ] && exec "$real" "\$@"
exit 1
EOS
printf '#!/bin/sh\ntouch "%s/deps-ran"\n' "$WORK" > "$WORK/deps.sh"
chmod +x "$WORK/bin/pkg-config" "$WORK/deps.sh"

for target in demo test; do
  rm -f "$WORK/deps-ran"
  PATH=$WORK/bin:$PATH submake -n BUILD="$WORK/b" DEPS="$WORK/deps.sh" "$target" \
    > "$WORK/$target.log" 2>&1 || { tail -n 20 "$WORK/$target.log"; fail "make -n $target"; }
  [ -e "$WORK/deps-ran" ] || fail "make $target did not run the deps script"
  # one command a line (make echoes a recipe's backslash-newlines as they are)
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$WORK/$target.log" |
    grep -- '-c tools/fuse/daemon.c' > "$WORK/$target.cc" ||
    fail "make -n $target compiles no FUSE daemon"
  if grep -v -- '-I/fresh-machine/fuse3' "$WORK/$target.cc"; then
    fail "make $target compiles the daemon without the flags pkg-config gives after deps"
  fi
done
echo "fresh_machine: demo and test build with the packages deps.sh installs"
