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
# Each figure is the median of MR_FP_REPS runs (3); rounds interleave the
# two transports. metaroce runs between two network namespaces; rxe, whose
# 6.12 version works only there, with both ends in the initial namespace
# and policy routing that sends its packets over the same veth pair.
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

# gid_index DEV IP: the GID table index of IP (IPv4-mapped, RoCE v2).
gid_index() {
	local want f i o
	IFS=. read -ra o <<<"$2"
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${o[@]}"
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		[[ $(<"$f") == "$want" ]] || continue
		[[ $(<"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i") == "RoCE v2" ]] ||
			continue
		echo "$i"
		return 0
	done
	return 1
}

cleanup() {
	set +e
	rdma link delete fp_mra 2>/dev/null
	rdma link delete fp_mrb 2>/dev/null
	rdma link delete fp_rxa 2>/dev/null
	rdma link delete fp_rxb 2>/dev/null
	ip link del "$VA" 2>/dev/null
	ip netns exec "$NA" ip link del "$VA" 2>/dev/null
	ip netns del "$NA" 2>/dev/null
	ip netns del "$NB" 2>/dev/null
	ip rule add pref 0 lookup local 2>/dev/null
	ip rule del pref "$LOCAL_PREF" lookup local 2>/dev/null
	ip rule del pref "$RULE_PREF" 2>/dev/null
	ip rule del pref "$((RULE_PREF + 1))" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

link_up() {
	ip ${1:+-n "$1"} link set "$2" mtu 1500
	ip ${1:+-n "$1"} addr replace "$3/24" dev "$2"
	ip ${1:+-n "$1"} link set "$2" up
}

# add_dev TYPE NAME NS NETDEV IP: an RDMA link whose IPv4 GID is ready.
add_dev() {
	if [[ -n $3 ]]; then
		ip netns exec "$3" rdma link add "$2" type "$1" netdev "$4"
	else
		rdma link add "$2" type "$1" netdev "$4"
	fi || die "rdma link add $2 type $1 netdev $4 failed"
	wait_for 10 gid_index "$2" "$5" || die "$2 has no GID for $5"
}

# metaroce: VA in NA, VB in NB.
topo_metaroce() {
	if ! ip netns add "$NA" || ! ip netns add "$NB"; then
		die "cannot create namespaces"
	fi
	ip -n "$NA" link set lo up
	ip -n "$NB" link set lo up
	ip link add "$VA" netns "$NA" type veth peer name "$VB" netns "$NB" ||
		die "cannot create the veth pair"
	link_up "$NA" "$VA" "$IPA"
	link_up "$NB" "$VB" "$IPB"
	add_dev metaroce fp_mra "$NA" "$VA" "$IPA"
	add_dev metaroce fp_mrb "$NB" "$VB" "$IPB"
}

# rxe: the same veth pair, both ends in the initial namespace, packets
# from IPA to IPB (and back) routed over it rather than over lo.
topo_rxe() {
	local d
	rdma link delete fp_mra
	rdma link delete fp_mrb
	ip -n "$NA" link set "$VA" netns 1
	ip -n "$NB" link set "$VB" netns 1
	for d in all default "$VA" "$VB"; do
		sysctl -qw "net.ipv4.conf.$d.rp_filter=0"
	done
	sysctl -qw "net.ipv4.conf.$VA.accept_local=1" \
		"net.ipv4.conf.$VB.accept_local=1"
	link_up "" "$VA" "$IPA"
	link_up "" "$VB" "$IPB"
	ip rule add pref "$RULE_PREF" iif lo to "$IPB" lookup "$TBL_A"
	ip rule add pref "$((RULE_PREF + 1))" iif lo to "$IPA" lookup "$TBL_B"
	ip rule add pref "$LOCAL_PREF" lookup local
	ip rule del pref 0 lookup local
	ip route replace "$IPB" dev "$VA" src "$IPA" table "$TBL_A"
	ip route replace "$IPA" dev "$VB" src "$IPB" table "$TBL_B"
	ip neigh replace "$IPB" lladdr "$(<"/sys/class/net/$VB/address")" \
		dev "$VA" nud permanent
	ip neigh replace "$IPA" lladdr "$(<"/sys/class/net/$VA/address")" \
		dev "$VB" nud permanent
	[[ $(ip -o route get "$IPB" from "$IPA") == *" dev $VA "* ]] ||
		die "policy routing: $IPA -> $IPB does not leave through $VA"
	add_dev rxe fp_rxa "" "$VA" "$IPA"
	add_dev rxe fp_rxb "" "$VB" "$IPB"
}

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
		sns=$NB cns=$NA sdev=fp_mrb cdev=fp_mra
	else
		sdev=fp_rxb cdev=fp_rxa
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
topo_metaroce
for ((r = 1; r <= REPS; r++)); do
	echo "fastpath: round $r of $REPS: metaroce"
	one_round metaroce
done
topo_rxe
for ((r = 1; r <= REPS; r++)); do
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
