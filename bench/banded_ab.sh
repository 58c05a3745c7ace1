#!/bin/sh
# banded_ab.sh: the banded solver of issue 20, item 3 (R = 10^4, 64 bands,
# 64-min-separation, certified 1e-8, loss only) with two builds of dpmf
# alternating, so that the machine's load falls on both alike
# (docs/solver.md, "Per-iteration cost").
#
# Usage, from the repository root:
#
#	sh bench/banded_ab.sh OLD [RUNS]
#
# OLD is a commit (or any revision) to compare with the working tree; RUNS
# (default 3) runs of each alternate, old first. Each line gives the build,
# the wall seconds mfsolve reports, the CPU seconds (user + system), the
# iterations, the gap and the loss; the medians follow. Builds go to a
# temporary directory, which is removed at the end.
set -eu
old=${1:?usage: sh bench/banded_ab.sh OLD [RUNS]}
runs=${2:-3}
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/old" "$old" >/dev/null 2>&1
(cd "$tmp/old" && go build -o "$tmp/mfsolve-old" ./cmd/mfsolve)
go build -o "$tmp/mfsolve-new" ./cmd/mfsolve
one() {
	/usr/bin/env time -f '%U %S' -o "$tmp/time" "$tmp/mfsolve-$1" -R 10000 \
		-strategy banded:bands=64 -participation minsep:64 -loss-only -no-cache -json >"$tmp/out"
	secs=$(sed 's/.*"seconds":\([0-9.]*\).*/\1/' "$tmp/out")
	iters=$(sed 's/.*"iterations":\([0-9]*\).*/\1/' "$tmp/out")
	gap=$(sed 's/.*"gap":\([0-9.e+-]*\).*/\1/' "$tmp/out")
	loss=$(sed 's/.*"loss":\([0-9.e+-]*\).*/\1/' "$tmp/out")
	cpu=$(awk '{print $1 + $2}' "$tmp/time")
	echo "$1 $secs $cpu $iters $gap $loss" | tee -a "$tmp/all"
}
echo "build wall-s cpu-s iterations gap loss"
i=0
while [ "$i" -lt "$runs" ]; do
	one old
	one new
	i=$((i + 1))
done
for b in old new; do
	awk -v b="$b" '$1 == b {print $2}' "$tmp/all" | sort -n |
		awk -v b="$b" '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%s median wall %.2f s over %d runs\n", b, m, NR}'
done
