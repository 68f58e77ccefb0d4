#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make sim: run the simulator's standard scenarios on both cores, write the
# TSV results and PNG plots into Documentation/sim/ and print the SIM lines
# and a summary table.
#
#   run-sim.sh MRSIM MRBENCH OUTDIR WORKDIR
set -euo pipefail

mrsim=$1
mrbench=$2
out=$3
work=$4

mkdir -p "$out" "$work"
start=$(date +%s)

# The all-to-all is the longest run: it gets a core of its own.
"$mrsim" -o "$out" alltoall >"$work/alltoall.out" 2>"$work/alltoall.err" &
a2a=$!
"$mrsim" -o "$out" loss planes plane_fail incast many >"$work/rest.out" \
	2>"$work/rest.err" &
rest=$!

# Memory and CPU cost per packet (instructions counted by callgrind).
cost() {
	local line sizes ns pkts instr="" ir
	line=$("$mrbench" 200000)
	ns=$(sed -n 's/.*ns_per_pkt=\([0-9.]*\).*/\1/p' <<<"$line")
	sizes=$(sed -n 's/^sizeof_/sizeof_/p' <<<"$line")
	if command -v valgrind >/dev/null 2>&1; then
		pkts=20000
		valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
			--toggle-collect=bench_loop "$mrbench" "$pkts" \
			>/dev/null 2>"$work/callgrind.err"
		ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$work/callgrind.out")
		instr=$(( ir / pkts ))
	fi
	local conn path rpath seg qp msg rmsg wnd
	conn=$(sed -n 's/.*sizeof_conn=\([0-9]*\).*/\1/p' <<<"$sizes")
	path=$(sed -n 's/.*sizeof_path=\([0-9]*\).*/\1/p' <<<"$sizes")
	rpath=$(sed -n 's/.*sizeof_rpath=\([0-9]*\).*/\1/p' <<<"$sizes")
	seg=$(sed -n 's/.*sizeof_seg=\([0-9]*\).*/\1/p' <<<"$sizes")
	qp=$(sed -n 's/.*sizeof_qp=\([0-9]*\).*/\1/p' <<<"$sizes")
	msg=$(sed -n 's/.*sizeof_msg=\([0-9]*\).*/\1/p' <<<"$sizes")
	rmsg=$(sed -n 's/.*sizeof_rmsg=\([0-9]*\).*/\1/p' <<<"$sizes")
	wnd=$(sed -n 's/.*msg_wnd=\([0-9]*\).*/\1/p' <<<"$sizes")
	{
		printf 'item\tbytes\n'
		printf 'struct mr_conn (16 path slots, send+receive halves)\t%s\n' "$conn"
		printf 'per path: struct mr_path + struct mr_rpath\t%s\n' $(( path + rpath ))
		printf 'struct mr_seg (one segment table entry)\t%s\n' "$seg"
		printf 'segment table, seg_wnd=1024 (default)\t%s\n' $(( seg * 1024 ))
		printf 'segment table, seg_wnd=4096 (single-connection scenarios)\t%s\n' $(( seg * 4096 ))
		printf 'segment table, seg_wnd=512 (all-to-all)\t%s\n' $(( seg * 512 ))
		printf 'connection total, default seg_wnd\t%s\n' $(( conn + seg * 1024 ))
		printf 'struct mr_qp (per RC QP, both directions, without its slots)\t%s\n' "$qp"
		printf 'responder message slots (struct mr_rmsg x %s)\t%s\n' "$wnd" $(( rmsg * wnd ))
		printf 'requester message slot (struct mr_msg), one per send queue entry up to %s\t%s\n' "$wnd" "$msg"
		printf 'QP total, send queue of %s or more\t%s\n' "$wnd" $(( qp + (rmsg + msg) * wnd ))
		printf 'QP total, send queue of 2\t%s\n' $(( qp + rmsg * wnd + msg * 2 ))
	} >"$out/cost_memory.tsv"
	{
		printf 'metric\tvalue\n'
		printf 'instructions_per_data_packet (callgrind, send+receive+ACK, both ends)\t%s\n' "${instr:-n/a}"
		printf 'ns_per_data_packet (this host, native)\t%s\n' "$ns"
	} >"$out/cost_cpu.tsv"
	echo "SIM scenario=cost transport=metaroce conn_bytes=$conn path_bytes=$(( path + rpath )) seg_bytes=$seg segtable_default_bytes=$(( seg * 1024 )) conn_total_default_bytes=$(( conn + seg * 1024 )) qp_bytes=$(( qp + (rmsg + msg) * wnd )) qp_sq2_bytes=$(( qp + rmsg * wnd + msg * 2 )) instr_per_pkt=${instr:-n/a} instr_counter=callgrind ns_per_pkt=$ns"
}
cost >"$work/cost.out"

fail=0
wait "$rest" || fail=1
wait "$a2a" || fail=1
if [ "$fail" -ne 0 ]; then
	cat "$work/rest.err" "$work/alltoall.err" >&2
	echo "mrsim failed" >&2
	exit 1
fi
cat "$work/rest.out" "$work/alltoall.out" "$work/cost.out" >"$work/sim.out"
grep '^SIM ' "$work/sim.out" >"$out/sim-lines.txt"

# Plots (gnuplot, PNG).
if command -v gnuplot >/dev/null 2>&1; then
	(
		cd "$out"
		gnuplot <<'GP'
set terminal pngcairo size 800,480 font "sans,10"
set datafile separator "\t"
set key autotitle columnhead
set grid

set output "loss.png"
set title "Goodput under random loss on every link (ratio to lossless, same transport)"
set xlabel "loss per link (%)"
set ylabel "goodput / lossless goodput"
set logscale x
set xrange [0.05:20]
set yrange [0:1.05]
plot "< awk -F'\t' 'NR==1 || ($1==\"metaroce\" && $2>0)' loss.tsv" using 2:4 with linespoints lw 2 title "MetaRoCE (8 paths, 8 planes)", \
     "< awk -F'\t' 'NR==1 || ($1==\"rocev2\" && $2>0)' loss.tsv" using 2:4 with linespoints lw 2 title "RoCEv2 baseline (1 path)"
unset logscale x
unset xrange

set output "planes.png"
set title "One connection over P planes: goodput / sum of plane capacities"
set style data histograms
set style histogram clustered
set style fill solid 0.8 border -1
set ylabel "utilization"
set xlabel ""
set yrange [0:1.05]
plot "< awk -F'\t' 'NR>1 && $2==4' planes.tsv" using 6:xtic(sprintf("%s/%s/%s", stringcolumn(1), stringcolumn(3), stringcolumn(4))) title "4 planes", \
     "< awk -F'\t' 'NR>1 && $2==8' planes.tsv" using 6 title "8 planes"
set style data lines
set xlabel

set output "plane_fail.png"
set title "Plane 3 of 8 fails at 1 ms, returns at 2.5 ms (MetaRoCE, one connection)"
set xlabel "time (us)"
set ylabel "Gb/s"
set yrange [0:*]
plot "plane_fail_ts.tsv" index 0 using 3:4 with lines lw 2 title "goodput", \
     "" index 0 using 3:8 with lines title "plane 3 tx", \
     "" index 0 using 3:5 with lines title "plane 0 tx"

set output "plane_fail_rocev2.png"
set title "RoCEv2 baseline: the QP's plane fails at 1 ms, returns at 2.5 ms"
plot "plane_fail_ts.tsv" index 1 using 3:4 with lines lw 2 title "goodput"

set output "incast.png"
set title "Incast 64 -> 1 (100 Gb/s bottleneck): goodput in 10 us bins"
set xlabel "time (us)"
set ylabel "Gb/s"
set yrange [0:*]
plot "incast_ts.tsv" index 3 using 4:9 with lines lw 2 title "MetaRoCE, all senders", \
     "" index 3 using 4:5 with lines title "MetaRoCE, sender 0", \
     "" index 3 using 4:6 with lines title "MetaRoCE, sender 1", \
     "" index 5 using 4:9 with lines lw 2 title "RoCEv2, all senders", \
     "" index 5 using 4:5 with lines title "RoCEv2, sender 0"

set output "alltoall.png"
set title "All-to-all, 512 hosts, 4 planes: completion time / ideal"
set style data histograms
set style fill solid 0.8 border -1
set ylabel "completion / ideal"
set xlabel ""
set yrange [0:*]
plot "alltoall.tsv" using 8:xtic(1) title "completion / ideal"
GP
	) || echo "warning: gnuplot failed; TSV results are complete" >&2
fi

end=$(date +%s)
echo "== MetaRoCE fabric simulator: results (Documentation/sim/) =="
for t in loss planes plane_fail incast alltoall cost_memory cost_cpu; do
	echo "-- $t"
	column -t -s $'\t' "$out/$t.tsv"
done
echo "-- SIM lines"
cat "$out/sim-lines.txt"
grep '^SIMPERF' "$work/sim.out" | awk '{
	for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
	ev += v["events"]; w += v["wall_s"] }
	END { if (w > 0) printf "events=%d simulated in %.1f s of run time: %.2f M events/s per core\n", ev, w, ev / w / 1e6 }'
echo "make sim: $(( end - start )) s"
