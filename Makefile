#-------------------------------------------------------------------------
#
# Makefile for pgstrata: PostgreSQL 17 with storage features, as a patch set.
#
#   make                 fetch + verify the pinned release, patch, build, install
#   make check           what CI runs: the project's tests in 17's release
#                        build, in a second, assert-enabled build
#                        (build/obj-cassert) and in 18's release build
#                        (build/18), then upstream's check-world on 17
#   make check-quick     the project's tests in the release build only
#   make check-all       make check, then 18's assert-enabled build, the
#                        project's tests in it and check-world on 18
#   make move-minor VERSION=17.12 [SHA256=...]
#                        move the series to another 17.x release
#   make demo            a throwaway cluster showing what the project does
#   make bench-toast     the TOAST compression benchmark (test/bench/toast)
#   make check-upstream  upstream's own suites against the patched build
#   make check-upstream-compressed  upstream's core, isolation, contrib and
#                        recovery suites with every relation stored compressed
#   make check-tools     pgBackRest and Citus built from their tarballs and run
#                        against compressed tablespaces (test/tools; not in
#                        make check)
#   make check-crash [CYCLES=200]  the long run of the OS-crash harness on
#                        LazyFS (test/crash), compressed and control; as root
#   make check-eio       the I/O-error tests on faultfs (test/fault); as root,
#                        not in make check (they fail until map pages are
#                        read with pread)
#   make tree            the patched source as a git tree (build/postgresql)
#   make refresh         write the tree's commits back into patches/ and src/
#   make check-patches   fail unless patches/ and src/ reproduce the trees
#                        of both series (each is made first if need be),
#                        or a patch breaks the series' naming rules
#   make clean           remove the build, keep the tree; distclean: all of build/
#
# Everything is built under build/ and installed into build/install.
#
# PostgreSQL 18: PG=18 before any target above (make PG=18, make PG=18
# check-quick, make PG=18 demo) selects PostgreSQL 18 and its own series,
# patches/18/ (UPSTREAM, series, patches), with the same src/ and contrib/;
# it builds in build/18/ (build/18/postgresql, build/18/obj,
# build/18/install, ...), so that 17 and 18 builds coexist.  Without PG,
# or with PG=17, everything is as above.
#
# Portions Copyright (c) 2026, pgstrata developers
#
#-------------------------------------------------------------------------

TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

# The major release: 17 (patches/, build/) or 18 (patches/18/, build/18/).
# The scripts read it as PGSTRATA_PG.
PG ?= 17
ifeq ($(PG),17)
PATCH_DIR := $(TOP)/patches
BUILD := $(TOP)/build
else ifeq ($(PG),18)
PATCH_DIR := $(TOP)/patches/18
BUILD := $(TOP)/build/18
# 18's io_method = io_uring (compressed forks read through it too)
PG_CONFIGURE := --with-liburing
PG_PACKAGES := liburing-dev
else
$(error PG=$(PG): the series exists for PostgreSQL 17 and 18 only)
endif
export PGSTRATA_PG := $(PG)
include $(PATCH_DIR)/UPSTREAM

TREE := $(BUILD)/postgresql
# PGSTRATA_FLAVOUR=cassert selects the assert-enabled build, with a build
# directory and an installation of its own (the ccache is shared).
export PGSTRATA_FLAVOUR
FLAVOUR_SUFFIX := $(if $(PGSTRATA_FLAVOUR),-$(PGSTRATA_FLAVOUR))
OBJ := $(BUILD)/obj$(FLAVOUR_SUFFIX)
PREFIX := $(BUILD)/install$(FLAVOUR_SUFFIX)
TOOLS := $(TOP)/patches/tools

# The tarball the user names, if any: make PG_TARBALL_FILE=/path/to/tarball
export PG_TARBALL_FILE

JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# Features the patch set needs (lz4, zstd), the tests need (TAP, injection
# points) and a DBA expects (ICU).  EXTRA_CONFIGURE adds to them, for example
# make EXTRA_CONFIGURE=--enable-cassert
CONFIGURE_FLAGS := --prefix=$(PREFIX) --with-lz4 --with-zstd --with-icu \
	--enable-tap-tests --enable-injection-points --enable-debug \
	--enable-depend $(if $(filter cassert,$(PGSTRATA_FLAVOUR)),--enable-cassert) \
	$(PG_CONFIGURE) $(EXTRA_CONFIGURE)
# configure records the compiler as gcc, which pg_config reports to every
# extension built with PGXS against this build.  ccache, where installed,
# serves this project's own builds only: through its directory of compiler
# names (Debian's /usr/lib/ccache), put first on PATH for configure and make.
CC_FOR_BUILD := gcc
CCACHE_BIN := $(firstword $(wildcard /usr/lib/ccache /usr/lib64/ccache))
BUILD_PATH := $(if $(CCACHE_BIN),$(CCACHE_BIN):)$(PATH)

# PostgreSQL's makefiles do some work (generated headers, the temporary
# installation) only in a top-level make, so they run as one.
PGMAKE := env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS PATH="$(BUILD_PATH)" \
	$(MAKE) --no-print-directory

# Where `make check` writes its logs.
CHECK_DIR := $(BUILD)/check$(FLAVOUR_SUFFIX)

.PHONY: all deps tree build install install-cassert check check-all check-quick \
	check-patches check-upstream check-upstream-compressed check-crash check-eio check-tools demo move-minor \
	refresh tree-reset clean distclean bench-toast fuzz

all: install

deps:
	@$(TOOLS)/install-deps.sh $(PG_PACKAGES)

tree: deps
	@$(TOOLS)/tree.sh update

# configure runs again when the options or the tree's configure script change.
$(OBJ)/.configure-flags: FORCE
	@mkdir -p $(OBJ)
	@echo 'CC=$(CC_FOR_BUILD) $(CONFIGURE_FLAGS)' | cmp -s - $@ || \
		echo 'CC=$(CC_FOR_BUILD) $(CONFIGURE_FLAGS)' > $@

$(OBJ)/config.status: $(OBJ)/.configure-flags $(TREE)/configure
	@echo "--- configuring ($(OBJ))"
	@cd $(OBJ) && PATH="$(BUILD_PATH)" $(TREE)/configure -q CC="$(CC_FOR_BUILD)" $(CONFIGURE_FLAGS)

# The tree must be updated before make looks at configure's timestamp.
build: tree
	@$(MAKE) --no-print-directory $(OBJ)/config.status
	@echo "--- building PostgreSQL $(PG_VERSION) with the patch series (-j$(JOBS))"
	@$(PGMAKE) -C $(OBJ) -s -j$(JOBS) world-bin
	@# PostgreSQL's programs depend on libpgfeutils.a order-only: the ones
	@# that copy compressed segments (fe_utils/pcs_file.c) are relinked
	@# here when the library is newer, or they keep its old code.
	@for p in pg_basebackup pg_combinebackup pg_rewind pg_upgrade; do \
		bin=$(OBJ)/src/bin/$$p/$$p; \
		if [ -f "$$bin" ] && [ $(OBJ)/src/fe_utils/libpgfeutils.a -nt "$$bin" ]; then \
			rm -f "$$bin" && $(PGMAKE) -C $(OBJ)/src/bin/$$p -s || exit 1; \
		fi; \
	done
	@$(PGMAKE) -C $(OBJ)/src/test/modules/injection_points -s -j$(JOBS)

install: build
	@$(PGMAKE) -C $(OBJ) -s install-world-bin >/dev/null
	@$(PGMAKE) -C $(OBJ)/src/test/modules/injection_points -s install >/dev/null
	@PATH="$(BUILD_PATH)" $(TOOLS)/install-contrib.sh
	@echo "--- installed into $(PREFIX)"

# The assert-enabled build, in build/obj-cassert and build/install-cassert.
install-cassert: tree
	@PGSTRATA_FLAVOUR=cassert $(MAKE) --no-print-directory install

# make check on 17 (CI): 17's release and assert-enabled builds and 18's
# release build; the project's suites in all three, upstream's check-world
# in 17's release build.  make check-all adds 18's assert-enabled pass and
# 18's check-world.  On 18 itself, make PG=18 check is make check's three
# parts in 18's builds (its suites upgrade from 17: 17's release build
# first); make PG=18 check-all is the same.
ifeq ($(PG),17)
check: install install-cassert
	@$(MAKE) --no-print-directory PG=18 PGSTRATA_FLAVOUR= PG_TARBALL_FILE= install
	@PGSTRATA_CHECK_18=1 $(TOP)/test/check-all.sh

check-all: install install-cassert
	@$(MAKE) --no-print-directory PG=18 PGSTRATA_FLAVOUR= PG_TARBALL_FILE= install
	@$(MAKE) --no-print-directory PG=18 PGSTRATA_FLAVOUR=cassert PG_TARBALL_FILE= install
	@PGSTRATA_CHECK_18=all $(TOP)/test/check-all.sh
else
check: install install-cassert
	@PGSTRATA_FLAVOUR= $(MAKE) --no-print-directory PG=17 PG_TARBALL_FILE= install
	@$(TOP)/test/check-all.sh

check-all: check
endif

# On 18 the suites include pg_upgrade from 17 (test/upgrade), which needs
# 17's release build too (whatever the flavour of this run).
ifeq ($(PG),18)
check-quick: install
	@PGSTRATA_FLAVOUR= $(MAKE) --no-print-directory PG=17 PG_TARBALL_FILE= install
	@$(TOP)/test/run-checks.sh
else
check-quick: install
	@$(TOP)/test/run-checks.sh
endif

check-patches: deps
	@PGSTRATA_PG=17 $(TOOLS)/tree.sh update
	@PGSTRATA_PG=17 $(TOOLS)/tree.sh check
	@PGSTRATA_PG=18 $(TOOLS)/tree.sh update
	@PGSTRATA_PG=18 $(TOOLS)/tree.sh check

check-upstream: install
	@$(TOP)/test/upstream/run-upstream.sh

check-upstream-compressed: install
	@$(TOP)/test/upstream/run-upstream-compressed.sh

# The OS-crash harness's long run (test/crash/run-crash.sh): CYCLES crash
# cycles with a compressed tablespace, then as many without compression
# (the control); make check runs a few cycles of it.  Root only: LazyFS
# is mounted for the test user by a root service.
CYCLES ?= 200
check-crash: install
	@$(TOP)/test/crash/run-crash.sh $(CYCLES)

# The I/O-error tests (test/fault/run-eio.sh): reads of chosen bytes fail
# with EIO on faultfs, mounted for the test user by a root service; make
# check runs them too.
check-eio: install
	@$(TOP)/test/fault/run-eio.sh

# pgBackRest's and Citus's workflows against compressed tablespaces, each
# tool built from its tarball into build/tools (doc/building-and-testing.md).
# make check-tools PG_CONFIG=/path/to/pg_config tests another installation
# (nothing is built here then; a PG_CONFIG in the environment is not
# taken); PGBACKREST_TARBALL=... and CITUS_TARBALL=... name other tarballs
# than ../shared/vendor's.
TOOLS_PG_CONFIG := $(if $(filter command line,$(origin PG_CONFIG)),$(PG_CONFIG))
export PGBACKREST_TARBALL CITUS_TARBALL
check-tools: $(if $(TOOLS_PG_CONFIG),,install)
	@PG_CONFIG="$(or $(TOOLS_PG_CONFIG),$(PREFIX)/bin/pg_config)" $(TOP)/test/tools/run-check-tools.sh

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

move-minor: deps
	@$(TOOLS)/tree.sh move "$(VERSION)" $(SHA256)

tree-reset:
	@$(TOOLS)/tree.sh reset

clean:
	rm -rf $(BUILD)/obj $(BUILD)/obj-cassert $(BUILD)/install \
		$(BUILD)/install-cassert $(BUILD)/check $(BUILD)/check-cassert \
		$(BUILD)/contrib $(BUILD)/contrib-cassert $(BUILD)/demo \
		$(BUILD)/upstream $(BUILD)/upstream-cassert \
		$(BUILD)/upstream-compressed $(BUILD)/upstream-compressed-cassert

# For 17, build/ holds build/18 too: distclean removes both.
distclean:
	rm -rf $(BUILD)

FORCE:
