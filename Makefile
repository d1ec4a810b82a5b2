# cairn build. `make` builds everything, `make test` runs every test,
# `make demo` runs the main job. BUILD selects the output folder, so several
# builds (plain, asan, tsan, clang) live side by side.

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
SAN      ?=
WERROR   ?=
VERSION  := $(shell sed -n 's/^\#define CAIRN_VERSION_STRING "\(.*\)"/\1/p' include/cairn/version.h)

BINDIR   ?= $(PREFIX)/bin
# The FUSE daemon, which `cairn mount` runs (a program for cairn, not for PATH).
LIBEXECDIR ?= $(PREFIX)/libexec/cairn
SBINDIR  ?= /sbin
DEPS     ?= scripts/deps.sh

include mk/flags.mk

CFLAGS   ?= -O2 -g
ifeq ($(WERROR),1)
WARN     += -Werror
endif
# Sanitizer flags stay apart from CFLAGS, so `make SAN=asan CFLAGS=-O1` keeps them.
SAN_CFLAGS :=
ifeq ($(SAN),asan)
SAN_CFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDSAN    := -fsanitize=address,undefined
endif
ifeq ($(SAN),tsan)
SAN_CFLAGS := -fsanitize=thread -fno-omit-frame-pointer
LDSAN    := -fsanitize=thread
endif
# Debug builds (DEBUG=1, and every sanitizer build) abort on a caller's misuse
# the library otherwise counts and survives (an over-forget of a namespace node).
ifneq ($(SAN)$(DEBUG),)
SAN_CFLAGS += -DCAIRN_DEBUG
endif
ALL_CFLAGS = $(STD_CFLAGS) -fPIC $(WARN) $(CFLAGS) $(SAN_CFLAGS) \
             $(INC_CFLAGS) $(PKG_CFLAGS)
LDLIBS    = $(PKG_LIBS) -lpthread -lm $(LDSAN)

# Layers: every lib/<layer>/*.c is part of libcairn (no FUSE in here).
LIB_SRCS  := $(sort $(wildcard lib/*/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
# The public API: every cairn_* function declared in these headers, and only
# those, is exported from libcairn.so (scripts/api-symbols.sh).
API_HEADERS := $(sort $(wildcard include/cairn/*.h))
# Front ends: the cairn tool (no libfuse), the FUSE daemon it runs for `cairn
# mount` (with the CLI's option helpers), and the mount helper.
CLI_SRCS  := $(sort $(wildcard tools/cairn/*.c))
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
DAEMON_SRCS := $(sort $(wildcard tools/fuse/*.c)) tools/cairn/cli_opts.c tools/cairn/mount_help.c
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/%.o)
HELPER_SRCS := $(sort $(wildcard tools/mount.cairn/*.c))
HELPER_OBJS := $(HELPER_SRCS:%.c=$(BUILD)/%.o)
# Front ends see the public headers only (tests/build/tools_public.sh).
$(CLI_OBJS) $(DAEMON_OBJS) $(HELPER_OBJS): INC_CFLAGS := -Iinclude
EXAMPLES  := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
BENCH_TOOLS := $(patsubst bench/%/main.c,$(BUILD)/bench/%,$(wildcard bench/*/main.c))
# Unit tests: lib/<layer>/tests/test_<name>.c, one cmocka program each.
TEST_SRCS := $(sort $(wildcard lib/*/tests/test_*.c))
# Test programs: tests/progs/<name>.c -> $(BUILD)/progs/<name> (plain C, real syscalls).
PROG_SRCS := $(sort $(wildcard tests/progs/*.c))
PROGS     := $(PROG_SRCS:tests/progs/%.c=$(BUILD)/progs/%)
unit_bin   = $(BUILD)/tests/$(word 2,$(subst /, ,$(1)))_$(basename $(notdir $(1)))
TEST_BINS := $(foreach t,$(TEST_SRCS),$(call unit_bin,$(t)))

LIBA  := $(BUILD)/libcairn.a
LIBSO := $(BUILD)/libcairn.so.0
LIBMAP := $(BUILD)/libcairn.map
CAIRN := $(BUILD)/cairn
DAEMON := $(BUILD)/cairn-fuse
MOUNT_HELPER := $(BUILD)/mount.cairn
# Changes when PREFIX or BINDIR does, so what has them compiled in is rebuilt.
PREFIX_STAMP := $(BUILD)/prefix.stamp

.PHONY: all deps test unit-test cli-test mount-test build-test san-test tsan-test demo bench \
        bench-quick fuzz install clean clang-check check test-bins FORCE
all: $(LIBA) $(LIBSO) $(CAIRN) $(DAEMON) $(MOUNT_HELPER) $(BUILD)/cairn.pc $(BENCH_TOOLS) $(PROGS) $(EXAMPLES)

deps:
	@$(DEPS) test

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(OBJ_CFLAGS) $(if $(filter tools/fuse/% bench/%,$<),$(FUSE_CFLAGS)) \
		-MMD -MP -c $< -o $@

$(LIBA): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(LIBMAP): $(API_HEADERS) scripts/api-symbols.sh
	@mkdir -p $(dir $@)
	CC="$(CC)" scripts/api-symbols.sh --map include > $@.tmp && mv $@.tmp $@

$(LIBSO): $(LIB_OBJS) $(LIBMAP)
	$(CC) -shared -Wl,-soname,libcairn.so.0 -Wl,--version-script=$(LIBMAP) -o $@ \
		$(LIB_OBJS) $(LDLIBS)
	ln -sf libcairn.so.0 $(BUILD)/libcairn.so

$(CAIRN): $(CLI_OBJS) $(LIBA)
	$(CC) -o $@ $(CLI_OBJS) $(LIBA) $(LDLIBS)

$(DAEMON): $(DAEMON_OBJS) $(LIBA)
	$(CC) -o $@ $(DAEMON_OBJS) $(LIBA) $(FUSE_LIBS) $(LDLIBS)

$(PREFIX_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(PREFIX) $(BINDIR) $(LIBEXECDIR)' | cmp -s - $@ || \
		echo '$(PREFIX) $(BINDIR) $(LIBEXECDIR)' > $@

# cairn mount runs the daemon from beside cairn, else from LIBEXECDIR.
$(BUILD)/tools/cairn/cmd_mount.o: OBJ_CFLAGS := -DCAIRN_LIBEXECDIR=\"$(LIBEXECDIR)\"
$(BUILD)/tools/cairn/cmd_mount.o: $(PREFIX_STAMP)

# mount(8) runs the helper without PATH: it finds the cairn installed with it in BINDIR.
$(HELPER_OBJS): OBJ_CFLAGS := -DCAIRN_BINDIR=\"$(BINDIR)\"
$(HELPER_OBJS): $(PREFIX_STAMP)
$(MOUNT_HELPER): $(HELPER_OBJS)
	$(CC) -o $@ $^ $(LDSAN)

# Objects of bench tools live in bench-obj/: build/bench/<tool> is the binary itself.
$(BUILD)/bench/%: $(BUILD)/bench-obj/%/main.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(FUSE_LIBS) $(LDLIBS)

.PRECIOUS: $(BUILD)/bench-obj/%/main.o
# Kept, so their dependency files stay true and they are not rebuilt every time.
.SECONDARY: $(EXAMPLES:%=%.o)
$(BUILD)/bench-obj/%/main.o: bench/%/main.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(FUSE_CFLAGS) -MMD -MP -c $< -o $@

# Plain C beside libc, not linked with the library: only the public headers
# (craft.c's format headers are reached by relative paths, as the fuzz build
# reaches them), and a dependency file, so a header change rebuilds them (a
# stale craft once hid a header it could not find).
$(BUILD)/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) $(STD_CFLAGS) $(WARN) $(CFLAGS) $(SAN_CFLAGS) $(INC_CFLAGS) -MMD -MP -MF $@.d \
		-o $@ $< $(LDSAN)

# Examples of embedding libcairn, built so they keep compiling.
$(BUILD)/examples/%: $(BUILD)/examples/%.o $(LIBA)
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/cairn.pc: cairn.pc.in include/cairn/version.h $(PREFIX_STAMP)
	@mkdir -p $(BUILD)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# $(1) = test source; test binaries link the static library and cmocka.
define TEST_RULE
$(call unit_bin,$(1)): $(BUILD)/$(1:.c=.o) $(LIBA)
	@mkdir -p $$(dir $$@)
	$$(CC) -o $$@ $$< $(LIBA) -lcmocka $$(LDLIBS)
endef
$(foreach t,$(TEST_SRCS),$(eval $(call TEST_RULE,$(t))))

test-bins: $(TEST_BINS)
unit-test: $(TEST_BINS)
	@scripts/run-unit-tests.sh $(TEST_BINS)

cli-test: all
	@scripts/run-shell-tests.sh $(BUILD) tests/cli

mount-test: all
	@scripts/run-shell-tests.sh $(BUILD) tests/mount

# The build itself: exported symbols, public headers, fresh-machine make, flags.
build-test: all
	@scripts/run-shell-tests.sh $(BUILD) tests/build

# One test by name: a shell test by its path (make check T=tests/cli/mkfs.sh), a
# unit test by its source or program name (T=lib/ns/tests/test_ns.c or T=ns_test_ns).
T ?=
T_UNIT = $(if $(filter %.c,$(T)),$(call unit_bin,$(T)),$(BUILD)/tests/$(notdir $(T)))
check: $(if $(filter %.sh,$(T)),all,$(if $(T),$(T_UNIT)))
	@case '$(T)' in \
	  '') echo "make check: name one test, e.g. make check T=tests/cli/mkfs.sh" \
	          "or T=lib/ns/tests/test_ns.c" >&2; exit 2 ;; \
	  *.sh) scripts/run-shell-tests.sh $(BUILD) $(T) ;; \
	  *) scripts/run-unit-tests.sh $(T_UNIT) ;; \
	esac

# The whole unit suite under ASan+UBSan (leak checks on), then under TSan, and
# the mount daemon under TSan (tests/tsan).
san-test:
	$(MAKE) BUILD=build-asan SAN=asan CC=clang unit-test cli-test
tsan-test:
	$(MAKE) BUILD=build-tsan SAN=tsan CC=clang unit-test
	$(MAKE) BUILD=build-tsan SAN=tsan CC=clang all
	@scripts/run-shell-tests.sh build-tsan tests/tsan

clang-check:
	$(MAKE) BUILD=build-clang CC=clang all test-bins

# demo and test install the packages first, then build in a new make, which asks
# pkg-config only now that the packages are there (`+`: also under make -n).
test:
	+@$(DEPS) test
	@[ "$$(id -u)" -eq 0 ] || echo "make test: not root, so the FUSE mount suites" \
	  "(tests/mount, tests/tsan) will be skipped; run 'sudo make test' for them" >&2
	$(MAKE) all
	$(MAKE) unit-test
	$(MAKE) cli-test
	$(MAKE) build-test
	$(MAKE) mount-test
	$(MAKE) clang-check
	$(MAKE) san-test
	$(MAKE) tsan-test
	@if [ -x fuzz/replay.sh ]; then fuzz/replay.sh; fi
	@echo "make test: all suites passed"

demo:
	+@$(DEPS) test
	$(MAKE) all
	@scripts/demo.sh $(BUILD)

bench:
	@$(DEPS) bench
	$(MAKE) all
	@bench/run.sh full

bench-quick:
	@$(DEPS) bench
	$(MAKE) all
	@bench/run.sh quick

fuzz:
	@fuzz/run.sh

install: $(LIBA) $(LIBSO) $(CAIRN) $(DAEMON) $(MOUNT_HELPER) $(BUILD)/cairn.pc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/cairn $(DESTDIR)$(SBINDIR) $(DESTDIR)$(LIBEXECDIR)
	install -m 755 $(CAIRN) $(DESTDIR)$(BINDIR)/cairn
	install -m 755 $(DAEMON) $(DESTDIR)$(LIBEXECDIR)/cairn-fuse
	install -m 755 $(MOUNT_HELPER) $(DESTDIR)$(SBINDIR)/mount.cairn
	ln -sf mount.cairn $(DESTDIR)$(SBINDIR)/mount.fuse.cairn # mount -t fuse.cairn
	install -m 644 $(LIBA) $(DESTDIR)$(PREFIX)/lib/libcairn.a
	install -m 755 $(LIBSO) $(DESTDIR)$(PREFIX)/lib/libcairn.so.0
	ln -sf libcairn.so.0 $(DESTDIR)$(PREFIX)/lib/libcairn.so
	install -m 644 include/cairn/*.h $(DESTDIR)$(PREFIX)/include/cairn/
	install -m 644 $(BUILD)/cairn.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/cairn.pc

clean:
	rm -rf build build-*

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(DAEMON_OBJS:.o=.d) $(HELPER_OBJS:.o=.d) \
         $(EXAMPLES:%=%.d) $(BENCH_TOOLS:$(BUILD)/bench/%=$(BUILD)/bench-obj/%/main.d) \
         $(TEST_SRCS:%.c=$(BUILD)/%.d) $(PROGS:%=%.d)
