# SPDX-License-Identifier: GPL-2.0-only
#
# MetaRoCE top-level Makefile.
#
#   make                  build metaroce.ko for the running kernel (or KDIR=/KVER=)
#                         and the userspace parts (core library, provider, tools)
#   make install          install the module and the rdma-core provider
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

.PHONY: all module module-6.12 module-6.1 modules-vm userspace install \
	install-module install-provider uninstall deps deps-check check \
	check-core check-build check-vm check-vm-6.1 check-dkms checkpatch \
	sparse demo sim bench bench-fastpath bench-scale clean help

all: module userspace

help:
	@sed -n '3,15p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

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

# --- install --------------------------------------------------------------

install: install-module install-provider

install-module: module
	$(MAKE) -C $(KDIR) M=$(BUILD)/kmod/$(KREL) KERNELRELEASE=$(KREL) modules_install
	depmod -a $(KREL)

install-provider: userspace
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace install

uninstall:
	rm -f /lib/modules/$(KREL)/updates/metaroce.ko /lib/modules/$(KREL)/extra/metaroce.ko
	-depmod -a $(KREL)
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace uninstall

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

check-core:
	@$(MAKE) -C $(TOP)/userspace BUILD=$(BUILD)/userspace check

# W=1 builds against both pinned kernels, checkpatch and sparse.
check-build:
	@$(TOP)/scripts/check-build.sh

check-vm: modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 -- $(TOP)/selftests/metaroce/run_tests.sh

check-vm-6.1: modules-vm userspace
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
bench: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --mem 4G --timeout 6000 -- $(TOP)/selftests/bench/all.sh

bench-fastpath: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --timeout 1800 -- $(TOP)/selftests/bench/fastpath.sh

bench-scale: deps-check modules-vm userspace
	@$(TOP)/selftests/vm/run --kernel 6.12 --mem 4G --timeout 1800 -- $(TOP)/selftests/bench/scale.sh

clean:
	rm -rf $(BUILD)
