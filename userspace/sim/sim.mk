# SPDX-License-Identifier: GPL-2.0-only
#
# Fabric simulator (included by core.mk):
#   sim        run the standard scenarios: table, TSV and plots under
#              Documentation/sim/, SIM lines on stdout
#   sim-smoke  small versions of the scenarios as a TAP test (make check)

SIM_DIR := $(CURDIR)/sim
SIM_SRC := $(filter-out $(SIM_DIR)/bench.c,$(wildcard $(SIM_DIR)/*.c))
SIM_BIN := $(BUILD)/sim/mrsim
SIM_BENCH := $(BUILD)/sim/mrbench
SIM_CFLAGS := $(CFLAGS) -O2

$(SIM_BIN): $(SIM_SRC) $(SIM_DIR)/sim.h $(CURDIR)/include/tap.h $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -o $@ $(SIM_SRC) $(CORE_LIB) -lm

$(SIM_BENCH): $(SIM_DIR)/bench.c $(CORE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -o $@ $< $(CORE_LIB)

sim: $(SIM_BIN) $(SIM_BENCH)
	@$(SIM_DIR)/run-sim.sh "$(SIM_BIN)" "$(SIM_BENCH)" \
		"$(TOP)/Documentation/sim" "$(BUILD)/sim"

sim-smoke: $(SIM_BIN)
	@echo "# sim-smoke"
	@$(SIM_BIN) smoke
