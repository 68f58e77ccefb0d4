#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# run_tests.sh [PATTERN...]: runs the programs of TEST_PROGS (Makefile), or
# those (and those of KNOWN_FAILING) whose name contains one of the
# PATTERNs, and prints KTAP: one line per program, its own TAP indented
# below. A program's exit status 0 is a
# pass, 4 (KSFT_SKIP) a skip, anything else (or a kernel warning it caused)
# a failure. Exits non-zero when any program failed.
#
# Time limit per program: a "# timeout: SECONDS" line in its header, else
# the directory's, kselftest's "settings" file's timeout=SECONDS (300 s);
# MR_TEST_TIMEOUT overrides both. MR_TEST_TIMEOUT_SCALE=N multiplies the
# limit (the debug kernel of make check-debug is several times slower).
#
# run_tests.sh --timeout PROG: prints PROG's limit, and runs nothing.
set -euo pipefail

# One compound command: bash reads it whole before running it, so editing
# this file cannot derail a run in progress.
{

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"

# The limit of a program that names none: kselftest's runner takes it from
# the same line of "settings".
default_timeout=$(sed -n 's/^timeout=\([0-9][0-9]*\)$/\1/p' settings | tail -n 1)
[[ -n $default_timeout ]] || { echo "Bail out! no timeout=SECONDS in $HERE/settings"; exit 1; }

# prog_timeout PROG: the program's time limit: MR_TEST_TIMEOUT if set, else
# what a "# timeout: SECONDS" line in its header says, else the default.
prog_timeout() {
	local t
	if [[ -n ${MR_TEST_TIMEOUT:-} ]]; then
		echo "$MR_TEST_TIMEOUT"
		return
	fi
	t=$(sed -n '1,30s/^# timeout: \([0-9][0-9]*\)$/\1/p' "$1" | head -n 1)
	echo "$((${t:-$default_timeout} * ${MR_TEST_TIMEOUT_SCALE:-1}))"
}

if [[ ${1:-} == --timeout ]]; then
	[[ $# == 2 && -f ${2%.sh}.sh ]] || { echo "usage: run_tests.sh --timeout PROG" >&2; exit 2; }
	prog_timeout "${2%.sh}.sh"
	exit
fi

read -ra all <<<"$(make -s --no-print-directory -f Makefile list-progs)"
# Programs known to fail run only when a PATTERN names them.
if (($#)); then
	read -ra known <<<"$(make -s --no-print-directory -f Makefile \
		list-known-failing)"
	all+=("${known[@]}")
fi
progs=()
for p in "${all[@]}"; do
	if (($# == 0)); then
		progs+=("$p")
		continue
	fi
	for pat; do
		[[ $p == *"$pat"* ]] && { progs+=("$p"); break; }
	done
done
# A PATTERN that names nothing is a mistake, not an empty pass.
for pat; do
	for p in "${all[@]}"; do
		[[ $p == *"$pat"* ]] && continue 2
	done
	echo "Bail out! no test program matches '$pat'"
	exit 1
done

# Kernel log lines that mean the kernel misbehaved (as the VM runner).
bad='Oops|BUG:|kernel BUG at|WARNING:|general protection fault[,:]|Call Trace:'
bad+='|KASAN|UBSAN|refcount_t:|INFO: task .* blocked|rcu: INFO:|rcu_.*stall'
bad+='|soft lockup|hard LOCKUP|list_(add|del) corruption'
# The debug kernel's checkers (make check-debug): lockdep, DEBUG_OBJECTS,
# KCSAN, kmemleak (most of them also print "WARNING:" or "BUG:").
bad+='|possible circular locking|ODEBUG:|KCSAN:|suspected memory leak'
can_dmesg=0
dmesg >/dev/null 2>&1 && can_dmesg=1

# Fatal kernel failures: once one happened the kernel cannot be trusted (and
# tests touching the broken object hang in D state), so the test is stopped
# and the remaining ones are reported as not run, i.e. failed.
fatal='Oops|BUG:|kernel BUG at|general protection fault[,:]|Kernel panic'
# ... but not the debug kernel's reports that leave the kernel running: a
# KASAN, KCSAN or UBSAN report, sleeping in atomic context (they still fail
# the program: $bad).
notfatal='BUG: (KASAN|KCSAN|UBSAN|sleeping function called|scheduling while atomic)'

# kmemleak (the debug kernel's, with its automatic scan off): scanned after
# each program; what it then suspects fails that program and is printed.
kmemleak=/sys/kernel/debug/kmemleak
[[ -w $kmemleak ]] || kmemleak=
# leak_scan: prints the suspected leaks of a fresh scan and forgets them.
# kmemleak reports an object only once two scans found it unreferenced
# (measured: 64 objects leaked on purpose, the first scan reported none,
# the second 63), and none younger than 5 s: the scan waits that long and
# scans twice, or a program's leaks would go unseen.
leak_scan() {
	local report
	[[ -n $kmemleak ]] || return 0
	sleep 5
	echo scan >"$kmemleak" 2>/dev/null || return 0
	echo scan >"$kmemleak" 2>/dev/null || return 0
	report=$(cat "$kmemleak" 2>/dev/null || true)
	echo clear >"$kmemleak" 2>/dev/null || true
	[[ -z $report ]] || echo "$report"
}
# The boot's own suspects are not the tests'.
leak_scan >/dev/null


# run_one PROG OUT: runs PROG in its own session, output to OUT and, indented,
# to us. Sets rc (124 on timeout) and oops=1 if the kernel oopsed meanwhile.
run_one() {
	local pid tailpid limit deadline grace=
	limit=$(prog_timeout "$1")
	deadline=$((SECONDS + limit))
	setsid "./$1" >"$2" 2>&1 </dev/null &
	pid=$!
	tail -n +1 -f --pid="$pid" "$2" | sed -u 's/^/    /' &
	tailpid=$!
	rc="" oops=0
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		if ((SECONDS >= deadline)); then
			rc=124
		elif ((can_dmesg && !oops)) &&
			dmesg | tail -n +"$((before + 1))" | grep -E "$fatal" |
			grep -qvE "$notfatal"; then
			oops=1 grace=$((SECONDS + 10)) # let it end on its own
		fi
		if [[ -n $rc ]] || { [[ -n $grace ]] && ((SECONDS >= grace)); }; then
			kill -KILL -- "-$pid" 2>/dev/null || true
			break
		fi
	done
	wait "$pid" 2>/dev/null && rc=${rc:-0} || rc=${rc:-$?}
	wait "$tailpid" 2>/dev/null || true
}

echo "TAP version 13"
echo "1..${#progs[@]}"
n=0 pass=0 fail=0 skip=0 dead=
for p in "${progs[@]}"; do
	n=$((n + 1))
	name=${p%.sh}
	if [[ -n $dead ]]; then
		echo "not ok $n $name # not run: the kernel oopsed in $dead"
		fail=$((fail + 1))
		continue
	fi
	echo "# RUN $name"
	before=0
	((can_dmesg)) && before=$(dmesg | wc -l)
	start=$SECONDS
	out=$(mktemp)
	run_one "$p" "$out"
	took=$((SECONDS - start))
	why=
	if ((can_dmesg)); then
		new=$(dmesg | tail -n +"$((before + 1))" | grep -E "$bad" || true)
		if [[ -n $new ]]; then
			echo "# $name: the kernel logged a problem during the test:"
			sed 's/^/#   /' <<<"$new" | head -n 20 || true
			why=" # kernel warning"
			((rc == 0 || rc == 4)) && rc=1
		fi
	fi
	leaks=$(leak_scan)
	if [[ -n $leaks ]]; then
		echo "# $name: kmemleak suspects leaks:"
		sed 's/^/#   /' <<<"$leaks" | head -n 200 || true
		why+=" # kmemleak"
		((rc == 0 || rc == 4)) && rc=1
	fi
	if ((oops)); then
		dead=$name why=" # kernel oops"
		((rc == 0 || rc == 4 || rc == 124)) && rc=1
	fi
	case $rc in
	0)
		echo "ok $n $name # ${took}s"
		pass=$((pass + 1))
		;;
	4)
		reason=$(sed -n 's/^1\.\.0 # SKIP //p' "$out" | tail -n 1)
		echo "ok $n $name # SKIP ${reason:-skipped}"
		skip=$((skip + 1))
		;;
	124)
		echo "not ok $n $name # TIMEOUT after $(prog_timeout "$p")s"
		fail=$((fail + 1))
		;;
	*)
		echo "not ok $n $name # exit $rc${why}"
		fail=$((fail + 1))
		;;
	esac
	rm -f "$out"
done
echo "# totals: pass:$pass fail:$fail skip:$skip"
((fail == 0))
exit
}
