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
	-I$(TOP)/include -I$(TOP)/drivers/metaroce/core -I$(CURDIR)/include \
	-MMD -MP

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

TEST_HDR := $(wildcard $(CURDIR)/tests/*.h $(CURDIR)/include/*.h \
	$(TOP)/include/metaroce/*.h) \
	$(TOP)/drivers/metaroce/core/internal.h

$(BUILD)/tests/%: $(CURDIR)/tests/%.c $(TEST_LIB_SRC) $(CORE_LIB) $(TEST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(CURDIR)/tests -o $@ $< $(TEST_LIB_SRC) $(CORE_LIB) -lm

# The unit tests once more, engine included, with AddressSanitizer and
# UndefinedBehaviorSanitizer (any report aborts the test program).
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
ASAN_CFLAGS = $(filter-out -O2 -MMD -MP,$(CFLAGS)) $(ASAN_FLAGS)
ASAN_BIN := $(patsubst $(CURDIR)/tests/%.c,$(BUILD)/asan/tests/%,$(TEST_SRC))
ASAN_CORE_OBJ := $(patsubst $(TOP)/drivers/metaroce/core/%.c,$(BUILD)/asan/core/%.o,$(CORE_SRC))
ASAN_CORE_LIB := $(BUILD)/asan/libmrcore.a

$(BUILD)/asan/core/%.o: $(TOP)/drivers/metaroce/core/%.c $(TEST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -c -o $@ $<

$(ASAN_CORE_LIB): $(ASAN_CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/asan/tests/%: $(CURDIR)/tests/%.c $(TEST_LIB_SRC) $(ASAN_CORE_LIB) $(TEST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) -I$(CURDIR)/tests -o $@ $< $(TEST_LIB_SRC) \
		$(ASAN_CORE_LIB) -lm

.PHONY: check-unit-plain check-unit-asan

# check-unit: the plain and the sanitized build (together well under 30 s).
check-unit: check-unit-plain check-unit-asan

check-unit-plain: all
	@$(CURDIR)/tests/run-tap.sh $(TEST_BIN)

check-unit-asan: $(ASAN_BIN)
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		$(CURDIR)/tests/run-tap.sh $(ASAN_BIN)

# The Wireshark dissector's decode test (tools/wireshark/test/run.sh):
# packets from the real encoder, dissected by tshark (skipped without it).
WS_DIR := $(TOP)/tools/wireshark
PCAPGEN := $(BUILD)/wireshark/pcapgen

$(PCAPGEN): $(WS_DIR)/test/pcapgen.c $(CORE_LIB) $(TEST_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(CORE_LIB)

.PHONY: check-dissector
check-dissector: $(PCAPGEN)
	@$(WS_DIR)/test/run.sh $(PCAPGEN) $(BUILD)/wireshark/out

# make check-core: unit tests, the dissector's decode test, a bounded fuzz
# run and a simulator smoke test.
check: check-unit check-dissector fuzz-smoke sim-smoke

-include $(CORE_OBJ:.o=.d)
