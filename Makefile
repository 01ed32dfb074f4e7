#-------------------------------------------------------------------------
#
# Makefile for pgstrata: PostgreSQL 17 with storage features, as a patch set.
#
#   make                 fetch + verify the pinned release, patch, build, install
#   make check           all of the project's tests (what CI runs)
#   make demo            a throwaway cluster showing what the project does
#   make bench-toast     the TOAST compression benchmark (test/bench/toast)
#   make check-upstream  upstream's own suites against the patched build
#   make check-upstream-compressed  upstream's core, isolation, contrib and
#                        recovery suites with every relation stored compressed
#   make tree            the patched source as a git tree (build/postgresql)
#   make refresh         write the tree's commits back into patches/ and src/
#   make check-patches   fail unless patches/ and src/ reproduce the tree
#   make clean           remove the build, keep the tree; distclean: all of build/
#
# Everything is built under build/ and installed into build/install.
#
# Portions Copyright (c) 2026, pgstrata developers
#
#-------------------------------------------------------------------------

TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
include $(TOP)/patches/UPSTREAM

BUILD := $(TOP)/build
TREE := $(BUILD)/postgresql
OBJ := $(BUILD)/obj
PREFIX := $(BUILD)/install
TOOLS := $(TOP)/patches/tools

# The tarball the user names, if any: make PG_TARBALL_FILE=/path/to/tarball
export PG_TARBALL_FILE

JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# Features the patch set needs (lz4, zstd), the tests need (TAP, injection
# points) and a DBA expects (ICU).  EXTRA_CONFIGURE adds to them, for example
# make EXTRA_CONFIGURE=--enable-cassert
CONFIGURE_FLAGS := --prefix=$(PREFIX) --with-lz4 --with-zstd --with-icu \
	--enable-tap-tests --enable-injection-points --enable-debug \
	--enable-depend $(EXTRA_CONFIGURE)
CCACHE := $(shell command -v ccache 2>/dev/null)
CC_FOR_BUILD := $(if $(CCACHE),ccache gcc,gcc)

# PostgreSQL's makefiles do some work (generated headers, the temporary
# installation) only in a top-level make, so they run as one.
PGMAKE := env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS $(MAKE) --no-print-directory

# Where `make check` writes its logs.
CHECK_DIR := $(BUILD)/check

.PHONY: all deps tree build install check check-patches check-upstream \
	check-upstream-compressed demo \
	refresh tree-reset clean distclean bench-toast fuzz

all: install

deps:
	@$(TOOLS)/install-deps.sh

tree: deps
	@$(TOOLS)/tree.sh update

# configure runs again when the options or the tree's configure script change.
$(OBJ)/.configure-flags: FORCE
	@mkdir -p $(OBJ)
	@echo 'CC=$(CC_FOR_BUILD) $(CONFIGURE_FLAGS)' | cmp -s - $@ || \
		echo 'CC=$(CC_FOR_BUILD) $(CONFIGURE_FLAGS)' > $@

$(OBJ)/config.status: $(OBJ)/.configure-flags $(TREE)/configure
	@echo "--- configuring ($(OBJ))"
	@cd $(OBJ) && $(TREE)/configure -q CC="$(CC_FOR_BUILD)" $(CONFIGURE_FLAGS)

# The tree must be updated before make looks at configure's timestamp.
build: tree
	@$(MAKE) --no-print-directory $(OBJ)/config.status
	@echo "--- building PostgreSQL $(PG_VERSION) with the patch series (-j$(JOBS))"
	@$(PGMAKE) -C $(OBJ) -s -j$(JOBS) world-bin
	@$(PGMAKE) -C $(OBJ)/src/test/modules/injection_points -s -j$(JOBS)

install: build
	@$(PGMAKE) -C $(OBJ) -s install-world-bin >/dev/null
	@$(PGMAKE) -C $(OBJ)/src/test/modules/injection_points -s install >/dev/null
	@$(TOOLS)/install-contrib.sh
	@echo "--- installed into $(PREFIX)"

check: install
	@$(TOP)/test/run-checks.sh

check-patches: deps
	@$(TOOLS)/tree.sh check

check-upstream: install
	@$(TOP)/test/upstream/run-upstream.sh

check-upstream-compressed: install
	@$(TOP)/test/upstream/run-upstream-compressed.sh

demo: install
	@$(TOP)/test/demo/run-demo.sh

bench-toast: install
	@$(TOP)/test/bench/toast/run.sh

# The pcs fuzz target under libFuzzer for FUZZ_SECONDS (default 600); clang
# and its sanitizer runtimes come from Debian (test/fuzz/run-fuzz.sh).
fuzz: install
	@$(TOP)/test/fuzz/run-fuzz.sh

refresh:
	@$(TOOLS)/tree.sh refresh

tree-reset:
	@$(TOOLS)/tree.sh reset

clean:
	rm -rf $(OBJ) $(PREFIX) $(CHECK_DIR) $(BUILD)/demo $(BUILD)/upstream \
		$(BUILD)/upstream-compressed

distclean:
	rm -rf $(BUILD)

FORCE:
