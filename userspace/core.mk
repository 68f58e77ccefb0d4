# SPDX-License-Identifier: GPL-2.0-only
#
# The transport engine (drivers/metaroce/core/) built as a userspace
# library, with its unit tests, fuzzer and simulator.

TOP := $(abspath $(CURDIR)/..)
BUILD ?= $(TOP)/build/userspace
CORE_SRC := $(wildcard $(TOP)/drivers/metaroce/core/*.c)
CORE_OBJ := $(patsubst $(TOP)/drivers/metaroce/core/%.c,$(BUILD)/core/%.o,$(CORE_SRC))
CORE_LIB := $(BUILD)/libmrcore.a

CC ?= cc
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	-I$(TOP)/include -I$(TOP)/drivers/metaroce/core -MMD -MP

TEST_SRC := $(wildcard $(CURDIR)/tests/test_*.c)
TEST_BIN := $(patsubst $(CURDIR)/tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TEST_LIB_SRC := $(filter-out $(TEST_SRC),$(wildcard $(CURDIR)/tests/*.c))

.PHONY: all check check-unit sim sim-smoke fuzz-smoke

all: $(CORE_LIB) $(TEST_BIN)

# The fuzzer (fuzz/fuzz.mk: fuzz-smoke) and the simulator (sim/sim.mk: sim,
# sim-smoke) add their own rules.
-include $(CURDIR)/fuzz/fuzz.mk
-include $(CURDIR)/sim/sim.mk

$(BUILD)/core/%.o: $(TOP)/drivers/metaroce/core/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(CORE_LIB): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: $(CURDIR)/tests/%.c $(TEST_LIB_SRC) $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CURDIR)/tests -o $@ $< $(TEST_LIB_SRC) $(CORE_LIB) -lm

check-unit: all
	@fail=0; for t in $(TEST_BIN); do echo "# $$(basename $$t)"; $$t || fail=1; done; exit $$fail

# make check-core: unit tests, a bounded fuzz run and a simulator smoke test.
check: check-unit fuzz-smoke sim-smoke

-include $(CORE_OBJ:.o=.d)
