#!/bin/sh
# manycores.sh: the heavy paths of issue 20 at GOMAXPROCS 2 and P, in one
# run, with the machine's own ceiling beside them (docs/scaling.md,
# "Sixteen cores").
#
# Usage, from the repository root:
#
#	sh bench/manycores.sh [P [REGEXP [BENCHTIME]]]
#
# P defaults to the number of CPUs (nproc). REGEXP picks benchmarks of
# ./bench/ (default: the ceiling, the structured fixed point at R = 10^6,
# forming B and C at R = 10^4, the mechanism at d = 10^6, the accountant's
# slowest point, the dense path at R = 800 and the banded solver at
# R = 10^4; about 6 minutes on the 16-core machine of docs/scaling.md),
# each result one iteration (BENCHTIME, default 1x, with REGEXP). Each
# benchmark runs at -cpu 2,P,2,P,2,P,2: the testing package runs the first
# value of a -cpu list at the list's last value (Go issue 49980), so the
# list starts and ends with 2 (the solvers' and the mechanism's results also
# report the GOMAXPROCS they ran at, procs). The table
# gives the median wall time at 2 and at P (4 and 3 runs) and their ratio.
# The raw output is kept in $TMPDIR/manycores.txt (or /tmp). With
# BENCH_TEST set to a test binary of ./bench/ (go test -c ./bench/), it runs
# that binary instead of building one: for a machine without Go, or to time
# two builds in one session.
set -eu
p=${1:-$(nproc)}
re=${2:-}
bt=${3:-1x}
case $p in
'' | *[!0-9]*)
	echo "manycores.sh: P must be a whole number of cores, got \"$p\"" >&2
	exit 2
	;;
esac
if [ "$p" -lt 3 ]; then
	echo "manycores.sh: P must be at least 3 (it is compared with 2), got $p" >&2
	exit 2
fi
bin=${BENCH_TEST:-}
if [ -z "$bin" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	bin=$dir/bench.test
	go test -c -o "$bin" ./bench/
fi
out=${TMPDIR:-/tmp}/manycores.txt
run() {
	"$bin" -test.run '^$' -test.bench "$1" -test.benchtime "$2" \
		-test.cpu "2,$p,2,$p,2,$p,2" -test.timeout 60m
}
# One iteration per result; the mechanism 20 rounds, the ceiling 3 runs.
{
	if [ -n "$re" ]; then
		run "$re" "$bt"
	else
		run 'Ceiling' 3x
		run 'ParStructured/R=1000000$|ParFormBC|PLDBounds/q=0.0001,sigma=1,T=100000$|ParDense/R=800$' 1x
		run 'ParMechanism/optimal' 20x
		run 'BandedMinSep/R=10000/' 1x
	fi
} | tee "$out"
# Name (without its -P suffix), ns/op, procs; medians per name and procs.
awk -v p="$p" '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	procs = 0
	for (i = 3; i <= NF; i++) if ($(i) == "procs") procs = $(i - 1) + 0
	if (procs == 0) { n = split($1, parts, "-"); procs = parts[n] + 0 }
	if (procs != 2 && procs != p) next
	key = name SUBSEP procs
	cnt[key]++; val[key, cnt[key]] = $3 / 1e9
	if (!(name in seen)) { seen[name] = 1; order[++names] = name }
}
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	for (i = 1; i <= n; i++) a[i] = val[key, i]
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	printf "\n| benchmark | median at 2 (runs) | median at %d (runs) | ratio |\n|---|---:|---:|---:|\n", p
	for (k = 1; k <= names; k++) {
		nm = order[k]; a = nm SUBSEP 2; b = nm SUBSEP (p + 0)
		if (!cnt[a] || !cnt[b]) continue
		m2 = median(a); mp = median(b)
		printf "| %s | %.4g s (%d) | %.4g s (%d) | %.2f |\n", nm, m2, cnt[a], mp, cnt[b], m2 / mp
	}
}' "$out"
