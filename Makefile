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
#   make deps             install every Debian package the project needs
#   make check            all tests (userspace, then kselftests in QEMU)
#   make demo             boot the VM and show two hosts talking over metaroce
#   make sim              run the fabric simulator's standard scenarios
#   make bench            run the whole VM benchmark set in one boot
#   make bench-fastpath   the userspace fast path against rxe's (VM)
#   make bench-scale      4000 RC QPs: time and memory per QP, against rxe (VM)
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

# Pinned kernels used by the VM tests.
KDIR_6_12 := /usr/src/linux-headers-$(MR_KVER_6_12)
KDIR_6_1 := /usr/src/linux-headers-$(MR_KVER_6_1)

W ?=
V ?= 0

.PHONY: all module module-6.12 module-6.1 modules-vm userspace test-tools \
	install install-module install-provider install-man install-wireshark \
	uninstall sign deps deps-check check check-man check-install \
	check-core check-build check-vm check-vm-6.1 check-dkms checkpatch \
	sparse demo sim bench bench-fastpath bench-scale clean help

all: module userspace

help:
	@sed -n '3,18p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

# --- kernel module --------------------------------------------------------

# build-module.sh KDIR [W]  -> build/kmod/<release>/drivers/metaroce/metaroce.ko
module:
	@test -d "$(KDIR)" || { echo "error: no kernel build tree at $(KDIR);" \
		"install linux-headers-$(KVER) or pass KDIR=/path/to/headers" >&2; exit 1; }
	@$(TOP)/scripts/build-module.sh "$(KDIR)" "$(W)" "$(V)"

module-6.12:
	@$(TOP)/scripts/build-module.sh "$(KDIR_6_12)" "$(W)" "$(V)"

module-6.1:
	@$(TOP)/scripts/build-module.sh "$(KDIR_6_1)" "$(W)" "$(V)"

modules-vm: module-6.12 module-6.1

# --- userspace ------------------------------------------------------------

userspace:
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace

# Tools only the tests and benchmarks use that need more than rdma-core
# (mr_coll: MPI, mpicc from libopenmpi-dev, which make deps installs).
test-tools:
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace test-tools

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

# --- dependencies ---------------------------------------------------------

deps:
	@$(TOP)/scripts/deps.sh

# Runs deps.sh only when something it provides is missing.
deps-check:
	@$(TOP)/scripts/deps.sh --if-missing

# --- tests ----------------------------------------------------------------

# The README's test command.
check: deps-check
	@$(TOP)/scripts/check.sh

check-core: check-man
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace check

# make install and make uninstall into a staging root, for both pinned
# kernels: what is installed where, and nothing left after uninstall.
check-install:
	@$(TOP)/scripts/check-install.sh

# metaroce(7) names every module parameter, sysfs file, counter and debugfs
# file the module defines.
check-man:
	@$(TOP)/scripts/check-man.sh

# W=1 builds against both pinned kernels, checkpatch and sparse.
check-build:
	@$(TOP)/scripts/check-build.sh

check-vm: modules-vm userspace test-tools
	@$(TOP)/selftests/vm/run --kernel 6.12 -- $(TOP)/selftests/metaroce/run_tests.sh

check-vm-6.1: modules-vm userspace test-tools
	@$(TOP)/selftests/vm/run --kernel 6.1 -- $(TOP)/selftests/metaroce/run_tests.sh

check-dkms:
	@$(TOP)/scripts/dkms-test.sh

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

bench-fastpath: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --timeout 1800 -- $(TOP)/selftests/bench/fastpath.sh

bench-scale: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --mem 4G --timeout 1800 -- $(TOP)/selftests/bench/scale.sh

clean:
	rm -rf $(BUILD)
