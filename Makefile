# cairn build. `make` builds everything, `make test` runs every test,
# `make demo` runs the main job. BUILD selects the output folder, so several
# builds (plain, asan, tsan, clang) live side by side.

BUILD    ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
SAN      ?=
WERROR   ?=
VERSION  := 0.1.0

PKGS      := libxxhash libzstd liblz4 zlib libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lxxhash -lzstd -llz4 -lz -lcurl)
FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null)
FUSE_LIBS   := $(shell pkg-config --libs fuse3 2>/dev/null || echo -lfuse3)

CFLAGS   ?= -O2 -g
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN     += -Werror
endif
ifeq ($(SAN),asan)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDSAN    := -fsanitize=address,undefined
endif
ifeq ($(SAN),tsan)
CFLAGS   += -fsanitize=thread -fno-omit-frame-pointer
LDSAN    := -fsanitize=thread
endif
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -fPIC -pthread $(WARN) $(CFLAGS) \
              -Iinclude -Ilib $(PKG_CFLAGS) -DCAIRN_VERSION=\"$(VERSION)\"
LDLIBS   := $(PKG_LIBS) -lpthread -lm $(LDSAN)

# Layers: every lib/<layer>/*.c is part of libcairn (no FUSE in here).
LIB_SRCS  := $(sort $(wildcard lib/*/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
# Front ends: the cairn tool (CLI + FUSE daemon) and the mount helper.
CLI_SRCS  := $(sort $(wildcard tools/cairn/*.c tools/fuse/*.c))
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o)
HELPER_SRCS := $(sort $(wildcard tools/mount.cairn/*.c))
EXAMPLES  := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
BENCH_TOOLS := $(patsubst bench/%/main.c,$(BUILD)/bench/%,$(wildcard bench/*/main.c))
# Unit tests: lib/<layer>/tests/test_<name>.c, one cmocka program each.
TEST_SRCS := $(sort $(wildcard lib/*/tests/test_*.c))
# Test programs: tests/progs/<name>.c -> $(BUILD)/progs/<name> (plain C, real syscalls).
PROG_SRCS := $(sort $(wildcard tests/progs/*.c))
PROGS     := $(PROG_SRCS:tests/progs/%.c=$(BUILD)/progs/%)
TEST_BINS := $(foreach t,$(TEST_SRCS),$(BUILD)/tests/$(word 2,$(subst /, ,$(t)))_$(basename $(notdir $(t))))

LIBA  := $(BUILD)/libcairn.a
LIBSO := $(BUILD)/libcairn.so.0
CAIRN := $(BUILD)/cairn
MOUNT_HELPER := $(BUILD)/mount.cairn

.PHONY: all deps test unit-test cli-test mount-test san-test tsan-test demo bench bench-quick \
        fuzz install clean clang-check
all: $(LIBA) $(LIBSO) $(CAIRN) $(MOUNT_HELPER) $(BUILD)/cairn.pc $(BENCH_TOOLS) $(PROGS) $(EXAMPLES)

deps:
	@scripts/deps.sh test

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(if $(filter tools/fuse/% bench/%,$<),$(FUSE_CFLAGS)) -MMD -MP -c $< -o $@

$(LIBA): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(LIBSO): $(LIB_OBJS)
	$(CC) -shared -Wl,-soname,libcairn.so.0 -o $@ $^ $(LDLIBS)
	ln -sf libcairn.so.0 $(BUILD)/libcairn.so

$(CAIRN): $(CLI_OBJS) $(LIBA)
	$(CC) -o $@ $(CLI_OBJS) $(LIBA) $(FUSE_LIBS) $(LDLIBS)

$(MOUNT_HELPER): $(HELPER_SRCS:%.c=$(BUILD)/%.o)
	$(CC) -o $@ $^ $(LDSAN)

# Objects of bench tools live in bench-obj/: build/bench/<tool> is the binary itself.
$(BUILD)/bench/%: $(BUILD)/bench-obj/%/main.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(FUSE_LIBS) $(LDLIBS)

.PRECIOUS: $(BUILD)/bench-obj/%/main.o
$(BUILD)/bench-obj/%/main.o: bench/%/main.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(FUSE_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/progs/%: tests/progs/%.c
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -pthread $(WARN) $(CFLAGS) -o $@ $< $(LDSAN)

# Examples of embedding libcairn, built so they keep compiling.
$(BUILD)/examples/%: $(BUILD)/examples/%.o $(LIBA)
	$(CC) -o $@ $^ $(LDLIBS)

$(BUILD)/cairn.pc: cairn.pc.in
	@mkdir -p $(BUILD)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# $(1) = test source; test binaries link the static library and cmocka.
define TEST_RULE
$(BUILD)/tests/$(word 2,$(subst /, ,$(1)))_$(basename $(notdir $(1))): $(BUILD)/$(1:.c=.o) $(LIBA)
	@mkdir -p $$(dir $$@)
	$$(CC) -o $$@ $$< $(LIBA) -lcmocka $$(LDLIBS)
endef
$(foreach t,$(TEST_SRCS),$(eval $(call TEST_RULE,$(t))))

unit-test: $(TEST_BINS)
	@scripts/run-unit-tests.sh $(TEST_BINS)

cli-test: all
	@scripts/run-shell-tests.sh $(BUILD) tests/cli

mount-test: all
	@scripts/run-shell-tests.sh $(BUILD) tests/mount

# The whole unit suite under ASan+UBSan (leak checks on), then under TSan, and
# the mount daemon under TSan (tests/tsan).
san-test:
	$(MAKE) BUILD=build-asan SAN=asan CC=clang unit-test cli-test
tsan-test:
	$(MAKE) BUILD=build-tsan SAN=tsan CC=clang unit-test
	$(MAKE) BUILD=build-tsan SAN=tsan CC=clang all
	@scripts/run-shell-tests.sh build-tsan tests/tsan

clang-check:
	$(MAKE) BUILD=build-clang CC=clang all $(TEST_BINS)

test: deps
	$(MAKE) all
	$(MAKE) unit-test
	$(MAKE) cli-test
	$(MAKE) mount-test
	$(MAKE) clang-check
	$(MAKE) san-test
	$(MAKE) tsan-test
	@if [ -x fuzz/replay.sh ]; then fuzz/replay.sh; fi
	@echo "make test: all suites passed"

demo: deps all
	@scripts/demo.sh $(BUILD)

bench:
	@scripts/deps.sh bench
	$(MAKE) all
	@bench/run.sh full

bench-quick:
	@scripts/deps.sh bench
	$(MAKE) all
	@bench/run.sh quick

fuzz:
	@fuzz/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/cairn $(DESTDIR)/sbin
	install -m 755 $(CAIRN) $(DESTDIR)$(PREFIX)/bin/cairn
	install -m 755 $(MOUNT_HELPER) $(DESTDIR)/sbin/mount.cairn
	install -m 644 $(LIBA) $(DESTDIR)$(PREFIX)/lib/libcairn.a
	install -m 755 $(LIBSO) $(DESTDIR)$(PREFIX)/lib/libcairn.so.0
	ln -sf libcairn.so.0 $(DESTDIR)$(PREFIX)/lib/libcairn.so
	install -m 644 include/cairn/*.h $(DESTDIR)$(PREFIX)/include/cairn/
	install -m 644 $(BUILD)/cairn.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/cairn.pc

clean:
	rm -rf build build-*

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(BENCH_TOOLS:$(BUILD)/bench/%=$(BUILD)/bench-obj/%/main.d) \
         $(TEST_SRCS:%.c=$(BUILD)/%.d)
