# Compiler flags shared by the main Makefile and fuzz/Makefile, so the fuzz
# build compiles the library as the real build does (same standard, defines and
# warnings), plus its own sanitizers and coverage.
#
# pkg-config is asked when a recipe first needs its answer, not when make reads
# this file: `make demo` and `make test` install the packages (scripts/deps.sh)
# after make has started, and an answer taken before that would lack the include
# paths (fuse3's headers live in /usr/include/fuse3). Each is asked once.

# libcurl's headers only: lib/remote/http.c opens libcurl.so.4 when a remote
# image is first opened (dlopen), so local mounts never load it and its TLS,
# Kerberos and LDAP libraries.
PKGS        := libxxhash libzstd liblz4 zlib libcrypto
PKG_CFLAGS   = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) libcurl 2>/dev/null))$(PKG_CFLAGS)
PKG_LIBS     = $(eval PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || \
                 echo -lxxhash -lzstd -llz4 -lz -lcrypto) -ldl)$(PKG_LIBS)
FUSE_CFLAGS  = $(eval FUSE_CFLAGS := $(shell pkg-config --cflags fuse3 2>/dev/null))$(FUSE_CFLAGS)
FUSE_LIBS    = $(eval FUSE_LIBS := $(shell pkg-config --libs fuse3 2>/dev/null || \
                 echo -lfuse3))$(FUSE_LIBS)

STD_CFLAGS  := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -pthread
WARN        := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
               -Wno-unused-parameter
INC_CFLAGS  := -Iinclude -Ilib
