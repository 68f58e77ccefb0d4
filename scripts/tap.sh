# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# scripts/tap.sh: sourced by the documentation checks (check-man.sh,
# check-docs.sh) and deb-test.sh for their TAP lines. result RC NAME
# [DIAG]: test n+1 is ok if RC is 0, else not ok with DIAG as a comment;
# $failed counts those. skip NAME REASON: test n+1 is skipped. tap_end:
# the plan, and false if a test failed.

n=0 failed=0
result() { # RC NAME [DIAG]
	n=$((n + 1))
	if (($1 == 0)); then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		[[ -z ${3:-} ]] || echo "# $3"
		failed=$((failed + 1))
	fi
}

skip() { # NAME REASON
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

tap_end() {
	echo "1..$n"
	((failed == 0))
}
