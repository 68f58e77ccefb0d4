# SPDX-License-Identifier: GPL-2.0-only
#
# libFuzzer targets for the transport engine (included by core.mk).
#
#   make -f core.mk fuzz-smoke    both targets, FUZZ_TIME seconds each (60),
#                                 in parallel, from a scratch copy of the
#                                 committed corpus; TAP; fails on any crash
#   make -f core.mk fuzz          long run (FUZZ_LONG_TIME, 3600 s) with a
#                                 corpus kept under $(BUILD)/fuzz/work/
#   make -f core.mk fuzz-build    just build them
#   make -f core.mk fuzz-corpus   regenerate the committed seed corpus
#   make -f core.mk fuzz-cov      line coverage of core/ by the corpus

FUZZ_CC ?= clang
FUZZ_DIR := $(CURDIR)/fuzz
FUZZ_BUILD := $(BUILD)/fuzz
FUZZ_TIME ?= 60
FUZZ_LONG_TIME ?= 3600
FUZZ_INC := -I$(TOP)/include -I$(TOP)/drivers/metaroce/core -I$(FUZZ_DIR)
FUZZ_CFLAGS := -g -O1 -std=gnu11 -Wall -Wextra -Werror \
	-Wno-unused-parameter -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined $(FUZZ_INC)
FUZZ_BIN := $(FUZZ_BUILD)/fuzz_wire $(FUZZ_BUILD)/fuzz_rx
FUZZ_HDR := $(wildcard $(FUZZ_DIR)/*.h) $(wildcard $(TOP)/include/metaroce/*.h) \
	$(TOP)/drivers/metaroce/core/internal.h

.PHONY: fuzz fuzz-build fuzz-corpus fuzz-cov

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_DIR)/fuzz_%.c $(CORE_SRC) $(FUZZ_HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(CORE_SRC)

$(FUZZ_BUILD)/gen_corpus: $(FUZZ_DIR)/gen_corpus.c $(CORE_LIB) $(FUZZ_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(FUZZ_DIR) -o $@ $< $(CORE_LIB)

fuzz-build: $(FUZZ_BIN)

fuzz-smoke: $(FUZZ_BIN)
	@$(FUZZ_DIR)/run-fuzz.sh $(BUILD) $(FUZZ_TIME) smoke

fuzz: $(FUZZ_BIN)
	@$(FUZZ_DIR)/run-fuzz.sh $(BUILD) $(FUZZ_LONG_TIME) long

fuzz-corpus: $(FUZZ_BUILD)/gen_corpus
	$(FUZZ_BUILD)/gen_corpus $(FUZZ_DIR)/corpus

# Source coverage of core/ when the committed corpus (and, if present, the
# long-run corpus) is replayed through non-fuzzing builds of the targets.
FUZZ_COV_FLAGS := -g -O0 -std=gnu11 -fprofile-instr-generate \
	-fcoverage-mapping $(FUZZ_INC)

$(FUZZ_BUILD)/cov_%: $(FUZZ_DIR)/fuzz_%.c $(FUZZ_DIR)/replay.c $(CORE_SRC) $(FUZZ_HDR)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_COV_FLAGS) -o $@ $< $(FUZZ_DIR)/replay.c $(CORE_SRC)

fuzz-cov: $(FUZZ_BUILD)/cov_wire $(FUZZ_BUILD)/cov_rx
	@for t in wire rx; do \
		rm -f $(FUZZ_BUILD)/cov_$$t.profraw; \
		LLVM_PROFILE_FILE=$(FUZZ_BUILD)/cov_$$t.profraw \
			$(FUZZ_BUILD)/cov_$$t $(FUZZ_DIR)/corpus/$$t \
			$$(test -d $(FUZZ_BUILD)/work/$$t && echo $(FUZZ_BUILD)/work/$$t); \
	done
	@llvm-profdata merge -o $(FUZZ_BUILD)/cov.profdata \
		$(FUZZ_BUILD)/cov_wire.profraw $(FUZZ_BUILD)/cov_rx.profraw
	@llvm-cov report $(FUZZ_BUILD)/cov_rx -object $(FUZZ_BUILD)/cov_wire \
		-instr-profile=$(FUZZ_BUILD)/cov.profdata $(CORE_SRC)
