# SPDX-License-Identifier: GPL-2.0-only
#
# MetaRoCE top-level Makefile.
#
#   make                  build metaroce.ko for the running kernel (or KDIR=/KVER=)
#                         and the userspace parts (core library, provider,
#                         verbs tools); nothing that needs MPI
#   make install          install the module, the rdma-core provider, the
#                         metaroce(7) man page and the Wireshark dissector
#                         (DESTDIR= stages them; make uninstall removes them)
#   make deb              Debian packages metaroce-dkms and
#                         ibverbs-provider-metaroce, into build/deb/
#   make dkms-source      the DKMS source tree, build/dkms/metaroce-<version>/
#   make deps             install every Debian package the project needs, fetch
#                         the test kernels, build the other releases' rootfs
#   make check            all tests (userspace, then kselftests in QEMU)
#   make fuzz-vm          the driver-layer packet fuzzer for hours (VM)
#   make check-matrix     every kselftest on every kernel x userland (hours)
#   make check-debug      every kselftest on a KASAN/lockdep/kmemleak/UBSAN
#                         kernel built from linux-source-6.12 (hours; KCSAN=1:
#                         its KCSAN flavour); make debug-kernel builds it
#   make demo             boot the VM and show two hosts talking over metaroce
#   make sim              run the fabric simulator's standard scenarios
#   make bench            run the whole VM benchmark set in one boot
#   make bench-fastpath   the userspace fast path against rxe's (VM)
#   make bench-scale      4000 RC QPs: time and memory per QP, against rxe (VM)
#   make bench-compare OLD=REV  today's module against REV's, one boot (VM)
#   make bench-profile    CPU time per byte by where it goes, against TCP (VM)
#
# Every build product lives under build/: the module is built out of a
# shadow tree per kernel release (build/kmod/<release>/), so builds for
# several kernels never clobber each other or the source tree.

SHELL := /bin/bash
TOP := $(CURDIR)
BUILD := $(TOP)/build

include $(TOP)/scripts/kernels.env

KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
# Release string of the tree in KDIR (may differ from KVER if KDIR was given):
# its UTS_RELEASE, which names /lib/modules/<release> and build/kmod/<release>
# (Debian's 6.1 headers have a different include/config/kernel.release).
KREL = $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"$$/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)

# The kernels the VM tests boot (scripts/kernels.env: 6.12 6.1 6.12-trixie
# 7.2), the other Debian releases they come from (trixie sid), and which of
# the kernels are the host release's (6.12 6.1).
PLATFORM = MR_TOP=$(TOP) bash -c '. $(TOP)/scripts/platform.sh && $(1)'
KERNELS := $(shell $(call PLATFORM,mr_kernel_names))
SUITES := $(shell $(call PLATFORM,mr_suites))
HOST_KERNELS := $(shell $(call PLATFORM,mr_kernel_names --host))

W ?=
V ?= 0

MODULE_TARGETS := $(addprefix module-,$(KERNELS))
USERLAND_TARGETS := $(addprefix userland-,$(SUITES))
CHECK_USERLAND_TARGETS := $(addprefix check-userland-,$(SUITES))

.PHONY: all module $(MODULE_TARGETS) modules-vm modules-all userspace \
	test-tools $(USERLAND_TARGETS) userlands $(CHECK_USERLAND_TARGETS) \
	install install-module install-provider install-man install-wireshark \
	uninstall sign deps deps-check deps-check-all rootfs check check-man check-docs \
	check-install check-core check-build check-vm check-vm-6.1 \
	check-matrix check-debug debug-kernel deps-debug check-dkms \
	dkms-source deb check-deb \
	checkpatch fuzz-vm sparse demo sim bench bench-compare \
	bench-fastpath bench-scale bench-profile clean help

all: module userspace

help:
	@sed -n '3,27p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

# --- kernel module --------------------------------------------------------

# build-module.sh KDIR [W]  -> build/kmod/<release>/drivers/metaroce/metaroce.ko
module:
	@test -d "$(KDIR)" || { echo "error: no kernel build tree at $(KDIR);" \
		"install linux-headers-$(KVER) or pass KDIR=/path/to/headers" >&2; exit 1; }
	@$(TOP)/scripts/build-module.sh "$(KDIR)" "$(W)" "$(V)"

# module-NAME for every kernel of scripts/kernels.env: module-6.12,
# module-6.1, module-6.12-trixie, module-7.2. Those of another Debian release
# are built inside its root filesystem (make deps makes it).
$(MODULE_TARGETS): module-%:
	@$(TOP)/scripts/build-module.sh --kernel $* "$(W)" "$(V)"

# The host release's kernels (what make demo and the benchmarks boot), and
# all of them.
modules-vm: $(addprefix module-,$(HOST_KERNELS))
modules-all: $(MODULE_TARGETS)

# --- userspace ------------------------------------------------------------

userspace:
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace

# Tools only the tests and benchmarks use that need more than rdma-core
# (mr_coll: MPI, mpicc from libopenmpi-dev, which make deps installs).
test-tools:
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace test-tools

# userland-SUITE: the provider and the test tools built inside the root
# filesystem of the Debian release SUITE, against its rdma-core, into
# build/userland/SUITE/userspace (which a VM with --userland SUITE sees as
# build/userspace); check-userland-SUITE also runs the provider's build-time
# checks against that release's libibverbs (check-pabi.sh, pabi_probe, the
# unit tests).
$(USERLAND_TARGETS): userland-%:
	@$(TOP)/scripts/in-rootfs.sh $* make --no-print-directory -C \
		$(TOP)/userspace BUILD=$(BUILD)/userland/$*/userspace provider tools

userlands: $(USERLAND_TARGETS)

$(CHECK_USERLAND_TARGETS): check-userland-%: userland-%
	@$(TOP)/scripts/in-rootfs.sh $* make --no-print-directory -C \
		$(TOP)/userspace/provider \
		BUILD=$(BUILD)/userland/$*/userspace/provider check


# --- install ---------------------------------------------------------------

# DESTDIR stages everything under another root (nothing runs depmod then).
# The module goes where modules_install puts it with INSTALL_MOD_DIR=updates:
# /lib/modules/<release>/updates/drivers/metaroce/metaroce.ko, compressed
# (.ko.xz, .ko.zst, .ko.gz) when the kernel's configuration compresses
# modules. The man page goes under PREFIX (man-db reads
# /usr/local/share/man); the provider where libibverbs looks for it; the
# dissector in Wireshark's global Lua plugin folder.
DESTDIR ?=
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
MULTIARCH := $(shell $(or $(CC),cc) -print-multiarch 2>/dev/null)
WIRESHARK_LUA_DIR ?= /usr/lib/$(MULTIARCH)/wireshark/plugins
MOD_TOP = $(DESTDIR)/lib/modules/$(KREL)/updates
MOD_DIR = $(MOD_TOP)/drivers/metaroce

install: install-module install-provider install-man install-wireshark

install-module: module
	$(MAKE) -C $(KDIR) M=$(BUILD)/kmod/$(KREL) KERNELRELEASE=$(KREL) \
		INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates modules_install
	$(if $(DESTDIR),,depmod -a $(KREL))

install-provider:
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace install

install-man:
	install -D -m 0644 $(TOP)/Documentation/metaroce.7 \
		$(DESTDIR)$(MANDIR)/man7/metaroce.7

install-wireshark:
	install -D -m 0644 $(TOP)/tools/wireshark/metaroce.lua \
		$(DESTDIR)$(WIRESHARK_LUA_DIR)/metaroce.lua

# Secure Boot: signs the built module with a Machine Owner Key before
# make install (README.md, "Secure Boot"). make install keeps the signature
# (kbuild's own attempt to sign with the kernel's key, which distributions
# do not ship, fails harmlessly).
MOK_KEY ?=
MOK_CERT ?=
sign: module
	@test -n "$(MOK_KEY)" -a -n "$(MOK_CERT)" || { echo "usage: make sign" \
		"MOK_KEY=/path/mok.key MOK_CERT=/path/mok.der" >&2; exit 1; }
	$(KDIR)/scripts/sign-file sha256 $(MOK_KEY) $(MOK_CERT) \
		$(BUILD)/kmod/$(KREL)/drivers/metaroce/metaroce.ko
	@modinfo -F signer $(BUILD)/kmod/$(KREL)/drivers/metaroce/metaroce.ko

# Removes what install installed, for the kernel release KREL (the running
# kernel's unless KDIR/KVER say otherwise), and only that.
uninstall:
	rm -f $(MOD_DIR)/metaroce.ko $(MOD_DIR)/metaroce.ko.xz \
		$(MOD_DIR)/metaroce.ko.zst $(MOD_DIR)/metaroce.ko.gz
	-rmdir --ignore-fail-on-non-empty $(MOD_DIR) $(MOD_TOP)/drivers \
		$(MOD_TOP) 2>/dev/null
	$(if $(DESTDIR),,-depmod -a $(KREL))
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace uninstall
	rm -f $(DESTDIR)$(MANDIR)/man7/metaroce.7
	rm -f $(DESTDIR)$(WIRESHARK_LUA_DIR)/metaroce.lua

# --- packages -------------------------------------------------------------

# The module's sources and dkms.conf, and nothing else (no build/), in
# build/dkms/<name>-<version>/, which `dkms add` copies to /usr/src
# (scripts/module-sources.sh lists the files; the metaroce-dkms package
# installs the same ones there).
dkms-source:
	@$(TOP)/scripts/module-sources.sh --stage $(BUILD)/dkms

# metaroce-dkms and ibverbs-provider-metaroce, built by dpkg-buildpackage
# from a copy of the source tree (debian/; scripts/build-deb.sh), into
# build/deb/. Builds no kernel module: DKMS does that where the package is
# installed.
deb:
	@$(TOP)/scripts/build-deb.sh

# --- dependencies ---------------------------------------------------------

deps:
	@$(TOP)/scripts/deps.sh

# Runs deps.sh only when something it provides is missing: what the host
# release's kernels and userland need (deps-check), or everything, the other
# releases' kernels and root filesystems included (deps-check-all).
deps-check:
	@$(TOP)/scripts/deps.sh --if-missing --host

deps-check-all:
	@$(TOP)/scripts/deps.sh --if-missing

# With what building the debug kernel takes (make check-debug).
deps-debug:
	@$(TOP)/scripts/deps.sh --if-missing --host --debug

# The other releases' root filesystems alone (make deps builds them too).
rootfs:
	@$(TOP)/scripts/rootfs.sh $(SUITES)

# --- tests ----------------------------------------------------------------

# The README's test command.
check: deps-check-all
	@$(TOP)/scripts/check.sh

# Every kselftest on every kernel with every userland (scripts/check-matrix.sh;
# hours: MR_MATRIX_KERNELS / MR_MATRIX_USERLANDS narrow it).
check-matrix: deps-check-all
	@$(TOP)/scripts/check-matrix.sh

# The debug kernel (scripts/debug-kernel.sh, cached under build/debug-kernel/;
# KCSAN=1: its KCSAN flavour) and metaroce.ko for it.
DEBUG_FLAVOUR = $(if $(filter-out 0,$(KCSAN)),debug-kcsan,debug)
debug-kernel: deps-debug
	@$(TOP)/scripts/debug-kernel.sh $(DEBUG_FLAVOUR)

# Every kselftest on the debug kernel, a boot each (scripts/check-debug.sh;
# hours: PROGS="hostile.sh leak.sh" narrows it).
check-debug: deps-debug userspace test-tools
	@KCSAN=$(KCSAN) $(TOP)/scripts/check-debug.sh $(PROGS)

check-core: check-man check-docs
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace check

# make install and make uninstall into a staging root, for both pinned
# kernels: what is installed where, and nothing left after uninstall.
check-install:
	@$(TOP)/scripts/check-install.sh

# metaroce(7) names every module parameter, sysfs file, counter and debugfs
# file the module defines.
check-man:
	@$(TOP)/scripts/check-man.sh

# What Documentation/ states of the code (sizes: userspace/tests/test_docs.c).
check-docs:
	@$(TOP)/scripts/check-docs.sh

# W=1 builds against every pinned kernel, checkpatch and sparse.
check-build:
	@$(TOP)/scripts/check-build.sh

check-vm: modules-vm userspace test-tools
	@$(TOP)/selftests/vm/run --kernel 6.12 -- $(TOP)/selftests/metaroce/run_tests.sh

check-vm-6.1: modules-vm userspace test-tools
	@$(TOP)/selftests/vm/run --kernel 6.1 -- $(TOP)/selftests/metaroce/run_tests.sh

check-dkms:
	@$(TOP)/scripts/dkms-test.sh

# make deb, then what the two packages hold (scripts/deb-test.sh).
check-deb:
	@$(TOP)/scripts/deb-test.sh

# selftests/metaroce/pktfuzz.sh for FUZZ_VM_SECONDS of fuzzing (default 3 h;
# make check runs it for 75 s). FUZZ_VM_SEED repeats a run's mutations.
FUZZ_VM_SECONDS ?= 10800
fuzz-vm: modules-vm userspace test-tools
	@MR_PKTFUZZ_SECONDS=$(FUZZ_VM_SECONDS) \
		MR_TEST_TIMEOUT=$$(($(FUZZ_VM_SECONDS) + 1200)) \
		$(if $(FUZZ_VM_SEED),MR_PKTFUZZ_SEED=$(FUZZ_VM_SEED)) \
		$(TOP)/selftests/vm/run --kernel 6.12 -- \
		$(TOP)/selftests/metaroce/run_tests.sh pktfuzz.sh

checkpatch:
	@$(TOP)/scripts/check-build.sh --checkpatch-only

# --- demos, simulator, benchmarks -----------------------------------------

demo: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 -- $(TOP)/selftests/metaroce/demo.sh

sim:
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace sim

# The whole set in one boot (selftests/bench/all.sh): run.sh (~25-30 min),
# fastpath.sh (~10), scale.sh (~2), multiplane.sh (~15).
bench: deps-check modules-vm userspace test-tools
	@$(TOP)/selftests/vm/run --kernel 6.12 --mem 4G --timeout 6000 -- $(TOP)/selftests/bench/all.sh

# Today's module against commit OLD's in one boot (lossless and 1 %; ~25 min).
bench-compare: deps-check modules-vm userspace test-tools
	@$(TOP)/scripts/bench-compare.sh $(OLD) $(ROUNDS)

bench-fastpath: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --timeout 1800 -- $(TOP)/selftests/bench/fastpath.sh

bench-scale: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --mem 4G --timeout 1800 -- $(TOP)/selftests/bench/scale.sh

# Where the CPU goes per byte, metaroce against TCP, with perf (~10 min).
bench-profile: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --timeout 1800 -- $(TOP)/selftests/bench/profile.sh

clean:
	rm -rf $(BUILD)
