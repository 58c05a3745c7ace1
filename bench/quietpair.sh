#!/bin/sh
# quietpair.sh: issue 20's two-core targets on a pair of cores of an idle
# many-core machine (taskset), and the same paths on all of its cores
# (docs/scaling.md, "A quiet pair of cores and sixteen").
#
# Usage, from the repository root, on Linux with taskset:
#
#	sh bench/quietpair.sh [CORES]
#
# CORES (default 2,3: not core 0, which takes most interrupts) is the pair
# of cores the two-core runs are pinned to; P, the number of cores for the
# many-core runs, is nproc. In order:
#
#  1. banded under min-separation, R = 10^4, b = 64, gap 1e-8, at
#     GOMAXPROCS 2, 1, 2, 1, 2 on the pair;
#  2. the structured optimum, R = 10^6, loss only, gap 1e-8, at GOMAXPROCS
#     1, 2, 2, 1, 1, 2 on the pair;
#  3. the structured optimum, R = 10^7, once at GOMAXPROCS 2 on the pair;
#  4. in process on the pair: the machine's ceiling and forming B and C at
#     R = 10^4 (BenchmarkCeiling, BenchmarkParFormBC), -cpu 2,1,2,1,2;
#  5. on all P cores: 2 three times, the ceiling and forming B and C at
#     -cpu 2,P,2,P,2, and 1 twice.
#
# Each mfsolve run prints its JSON (loss, gap, iterations) and a line from
# bench/rusage (wall, CPU and peak memory). About 7.5 minutes on the 16-core
# machine of docs/scaling.md. With MFSOLVE, BENCH_TEST and RUSAGE set to
# binaries (CGO_ENABLED=0 go build -o X ./cmd/mfsolve; go test -c ./bench/;
# go build ./bench/rusage) it runs those instead of building them: for a
# machine without Go.
set -eu
pair=${1:-2,3}
p=$(nproc)
if ! command -v taskset >/dev/null; then
	echo "quietpair.sh: needs taskset (util-linux)" >&2
	exit 2
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mf=${MFSOLVE:-}
bt=${BENCH_TEST:-}
ru=${RUSAGE:-}
[ -n "$mf" ] || { mf=$dir/mfsolve; go build -o "$mf" ./cmd/mfsolve; }
[ -n "$bt" ] || { bt=$dir/bench.test; go test -c -o "$bt" ./bench/; }
[ -n "$ru" ] || { ru=$dir/rusage; go build -o "$ru" ./bench/rusage; }
pin="taskset -c $pair"
banded="-R 10000 -strategy banded:bands=64 -participation minsep:64 -loss-only -no-cache -json"
opt="-loss-only -no-cache -json -strategy optimal:tol=1e-8"
echo "== $(date -u) load $(cut -d' ' -f1-3 /proc/loadavg), $p cores, pair $pair"
echo "== 1. banded R = 10^4 on the pair"
for g in 2 1 2 1 2; do GOMAXPROCS=$g $pin "$ru" b1e4 "$mf" $banded; done
echo "== 2. structured R = 10^6 on the pair"
for g in 1 2 2 1 1 2; do GOMAXPROCS=$g $pin "$ru" s1e6 "$mf" -R 1000000 $opt; done
echo "== 3. structured R = 10^7 on the pair"
GOMAXPROCS=2 $pin "$ru" s1e7 "$mf" -R 10000000 $opt
echo "== 4. ceiling and forming B and C on the pair"
$pin "$bt" -test.run '^$' -test.bench 'Ceiling|ParFormBC' -test.cpu 2,1,2,1,2 -test.benchtime 1x -test.timeout 20m
echo "== 5. all $p cores"
for g in "$p" "$p" "$p"; do GOMAXPROCS=$g "$ru" s1e6 "$mf" -R 1000000 $opt; done
"$bt" -test.run '^$' -test.bench 'Ceiling|ParFormBC' -test.cpu "2,$p,2,$p,2" -test.benchtime 1x -test.timeout 20m
for g in "$p" "$p"; do GOMAXPROCS=$g "$ru" b1e4 "$mf" $banded; done
echo "== done $(date -u) load $(cut -d' ' -f1-3 /proc/loadavg)"
