#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/bench/fastpath.sh: the userspace fast path, metaroce (with
# libmetaroce's rings) against rxe (with Debian's provider) in one VM boot,
# on one veth pair (MTU 1500), no loss:
#
#   lat_write, lat_send   ib_write_lat / ib_send_lat, 8 B: median
#                         (perftest's t_typical) and 99th percentile, in us
#   rate_8, rate_64       ib_write_bw, 8 B and 64 B: message rate, Mpps
#   syscalls              ib_write_bw, 64 B: the client's uverbs commands
#                         (ioctl() and write(), counted with strace) per
#                         work request, from two runs of 2000 and 20000
#                         work requests (the set-up cancels out)
#
# Each figure is the median of MR_FP_REPS runs (3); each round runs both
# transports, metaroce first. metaroce runs between two network
# namespaces; rxe, whose 6.12 version works only there, with both ends in
# the initial namespace and policy routing that sends its packets over the
# same veth pair.
#
# Output: "FASTPATH test=... transport=... value=... runs=..." lines and
# "RATIO test=... value=..." (metaroce / rxe; for latencies and system
# calls, smaller is better), and, when every run succeeded,
# Documentation/bench/fastpath.tsv and the section of
# Documentation/benchmarks.rst between the fastpath-generated markers.
# Exit status: 0, 1 when a run failed, 4 when a tool or module is missing.

set -u
KSFT_SKIP=4
TOP=$(cd "$(dirname "$0")/../.." && pwd)
REPS=${MR_FP_REPS:-3}
DOCS=${MR_FP_DOCS:-auto}
WORK=$(mktemp -d /tmp/mr-fastpath.XXXXXX)
RESULTS=$WORK/results.tsv

DEVS=fp
NA=mrfp-a NB=mrfp-b VA=mrfp-a0 VB=mrfp-b0
IPA=10.78.0.1 IPB=10.78.0.2
TBL_A=7801 TBL_B=7802 RULE_PREF=110 LOCAL_PREF=1000
PORT=18900
CALIBRATION='Correlation coefficient'

die() { echo "fastpath: $*" >&2; exit 1; }
skip() { echo "fastpath: SKIP: $*" >&2; exit "$KSFT_SKIP"; }

for t in ib_write_lat ib_send_lat ib_write_bw strace rdma; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done
modprobe metaroce 2>/dev/null || skip "metaroce.ko is not available"
modprobe rdma_rxe 2>/dev/null || skip "rdma_rxe is not available"

wait_for() {
	local n=$(($1 * 10))
	shift
	while ((n-- > 0)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# shellcheck source=selftests/bench/veth_pair.sh
. "$TOP/selftests/bench/veth_pair.sh"

cleanup() {
	set +e
	veth_pair_cleanup
	rm -rf "$WORK"
}
trap cleanup EXIT

tcp_listening() {
	if [[ -n $1 ]]; then
		[[ -n $(ip netns exec "$1" ss -Htln "sport = :$2") ]]
	else
		[[ -n $(ss -Htln "sport = :$2") ]]
	fi
}

# perf TRANSPORT OUT [strace FILE] TOOL ARGS...: one perftest run (server,
# then client) of TRANSPORT; the client's report in OUT. Retried when
# perftest cannot calibrate its clock (it happens on the emulated CPU).
perf() {
	local tr=$1 out=$2 st=() try pid sns="" cns="" sdev cdev sx cx
	shift 2
	if [[ $1 == strace ]]; then
		st=(strace -f -qq --seccomp-bpf -c -e "trace=ioctl,write" -o "$2")
		shift 2
	fi
	if [[ $tr == metaroce ]]; then
		sns=$NB cns=$NA sdev=${DEVS}_mrb cdev=${DEVS}_mra
	else
		sdev=${DEVS}_rxb cdev=${DEVS}_rxa
	fi
	sx=$(gid_index "$sdev" "$IPB") cx=$(gid_index "$cdev" "$IPA")
	for ((try = 1; try <= 5; try++)); do
		PORT=$((PORT + 1))
		${sns:+ip netns exec "$sns"} timeout 120 "$@" -d "$sdev" -x "$sx" \
			-p "$PORT" >"$out.srv" 2>&1 &
		pid=$!
		wait_for 30 tcp_listening "$sns" "$PORT" || {
			cat "$out.srv"
			die "$1 ($tr) does not listen"
		}
		if ${cns:+ip netns exec "$cns"} timeout 120 "${st[@]}" "$@" \
			-d "$cdev" -x "$cx" -p "$PORT" "$IPB" >"$out" 2>&1 &&
			wait "$pid"; then
			return 0
		fi
		wait "$pid"
		grep -q "$CALIBRATION" "$out" "$out.srv" || break
	done
	echo "fastpath: $* ($tr) failed:" >&2
	tail -n 20 "$out" "$out.srv" >&2
	return 1
}

# result_line FILE SIZE: the first report line for SIZE.
result_line() {
	awk -v s="$2" '$1 == s && $2 ~ /^[0-9]+$/ && NF >= 5 { print; exit }' "$1"
}

record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RESULTS"; }

failed=0

run_lat() {	# TRANSPORT TOOL TEST
	local f out=$WORK/$1.$3
	if perf "$1" "$out" "$2" -s 8 -n 2000; then
		read -ra f <<<"$(result_line "$out" 8)"
		[[ ${f[4]:-} =~ ^[0-9.]+$ && ${f[7]:-} =~ ^[0-9.]+$ ]] ||
			{ cat "$out"; failed=1; return; }
		record "$3.median_us" "$1" "${f[4]}"
		record "$3.p99_us" "$1" "${f[7]}"
	else
		failed=1
	fi
}

run_rate() {	# TRANSPORT SIZE
	local f out=$WORK/$1.rate$2
	if perf "$1" "$out" ib_write_bw -s "$2" -n 20000; then
		read -ra f <<<"$(result_line "$out" "$2")"
		[[ ${f[4]:-} =~ ^[0-9.]+$ ]] || { cat "$out"; failed=1; return; }
		record "rate_$2.mpps" "$1" "${f[4]}"
	else
		failed=1
	fi
}

calls_of() { awk '$NF == "total" { print $4 }' "$1"; }

run_syscalls() {	# TRANSPORT
	local out=$WORK/$1.sc c1 c2
	perf "$1" "$out" strace "$out.st1" ib_write_bw -s 64 -n 2000 &&
		c1=$(calls_of "$out.st1") &&
		perf "$1" "$out" strace "$out.st2" ib_write_bw -s 64 -n 20000 &&
		c2=$(calls_of "$out.st2") || { failed=1; return; }
	[[ $c1 =~ ^[0-9]+$ && $c2 =~ ^[0-9]+$ ]] || { failed=1; return; }
	record syscalls.per_wr "$1" "$(awk -v a="$c1" -v b="$c2" \
		'BEGIN { printf "%.4f", (b - a) / 18000 }')"
}

one_round() {	# TRANSPORT
	run_lat "$1" ib_write_lat lat_write
	run_lat "$1" ib_send_lat lat_send
	run_rate "$1" 8
	run_rate "$1" 64
	run_syscalls "$1"
}

: >"$RESULTS"
# Each round builds the pair afresh: metaroce's topology, then rxe's.
for ((r = 1; r <= REPS; r++)); do
	veth_pair_cleanup
	topo_metaroce
	echo "fastpath: round $r of $REPS: metaroce"
	one_round metaroce
	topo_rxe
	echo "fastpath: round $r of $REPS: rxe"
	one_round rxe
done

# Medians, ratios, and the report.
summary=$WORK/summary.tsv
sort -k1,1 -k2,2 -k3,3g "$RESULTS" | awk -F'\t' '
	{ k = $1 "\t" $2; v[k, ++n[k]] = $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k } }
	END {
		for (i = 1; i <= nk; i++) {
			k = keys[i]; c = n[k]
			m = c % 2 ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2
			printf "%s\t%s\t%d\n", k, m, c
		}
	}' >"$summary"
while IFS=$'\t' read -r test tr value runs; do
	echo "FASTPATH test=$test transport=$tr value=$value runs=$runs"
done <"$summary"
awk -F'\t' '{ v[$1, $2] = $3; t[$1] = 1 }
	END { for (k in t) if ((k, "rxe") in v && v[k, "rxe"] > 0)
		printf "RATIO test=%s value=%.3f\n", k, v[k, "metaroce"] / v[k, "rxe"] }' \
	"$summary" | sort

if ((failed)); then
	echo "fastpath: a run failed: Documentation/ left alone" >&2
	exit 1
fi
[[ $DOCS == 0 ]] && exit 0
cp "$summary" "$TOP/Documentation/bench/fastpath.tsv"
python3 "$TOP/selftests/bench/fastpath_report.py" \
	"$summary" "$TOP/Documentation/benchmarks.rst" "$(uname -r)" "$REPS"
