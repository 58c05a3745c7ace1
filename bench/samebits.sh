#!/bin/sh
# samebits.sh: checks that a change of the code changed no number the
# commands produce. It builds mfsolve, dpacct, ofl and dpaudit from an older
# commit and from the working tree, runs each case with both builds in fresh
# directories, and compares stdout, stderr, the exit status and every file
# a case writes (.npy factors and noise, CSV, JSON, figures), byte for byte.
# Wall times are masked first: "seconds" fields, seconds=, the last column
# of mfsolve -compare's table, dpaudit's "0.03s PASS" and the "in 12s" of
# generated summaries. Nothing else is.
#
# Usage, from the repository root:
#
#	sh bench/samebits.sh OLD [CASES]
#
# OLD is a commit (or any revision). CASES is a file of command lines, one
# a line (# starts a comment), each run by sh in an empty directory with the
# build's commands first on PATH; without it, a built-in spread of about 70
# cases (every strategy under the three participation kinds and both
# workloads, factors and noise files, calibrations, dpacct's commands, ofl
# runs and ofl reproduce -quick, dpaudit) that takes a few minutes. A
# SAMEBITS_MASK environment variable adds a sed -E expression to the masks,
# for a difference made on purpose. One line per case: "same" or "DIFF"
# with what differs; the exit status is 1 when any case differs. The
# outputs stay in the directory named on the last line.
set -eu
old=${1:?usage: sh bench/samebits.sh OLD [CASES]}
root=$(pwd)
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/src" >/dev/null 2>&1 || true' EXIT
git worktree add --detach "$tmp/src" "$old" >/dev/null 2>&1
mkdir -p "$tmp/old" "$tmp/new"
(cd "$tmp/src" && go build -o "$tmp/old/" ./cmd/...)
go build -o "$tmp/new/" ./cmd/...
if [ $# -ge 2 ]; then
	cp "$2" "$tmp/cases"
else
	{
		for s in identity tree sqrt sqrt-normalized banded bsr banded-toeplitz bisr bandinv blt semiseparable optimal; do
			for p in single minsep:4; do
				echo "mfsolve -json -no-cache -loss-only -R 96 -strategy $s -participation $p"
			done
			echo "mfsolve -json -no-cache -R 64 -strategy $s -participation epochs:2 -workload momentum:0.9 -o B.npy -C C.npy"
			echo "mfsolve -no-cache -R 100 -strategy $s -noise Z.npy -dim 2 -seed 9 -eps 2 -delta 1e-5 -participation minsep:4"
		done
		cat <<'EOF'
mfsolve -no-cache -R 200 -compare
mfsolve -no-cache -R 256 -strategy banded:bands=8 -sampling 0.05 -eps 2 -delta 1e-5 -json
mfsolve -no-cache -R 128 -strategy blt -eps 1 -delta 1e-5 -relation add-remove -calibration paper
dpacct sigma -eps 1 -delta 1e-5 -json
dpacct sigma -eps 2 -delta 1e-6 -method rdp
dpacct epsilon -sigma 1 -delta 1e-5 -compositions 100 -method zcdp
dpacct epsilon -sigma 0.8 -delta 1e-5 -sampling 0.01 -steps 1000 -json
dpacct delta -sigma 1 -eps 1 -sampling 0.1 -steps 100 -relation replace-one
dpacct sigma -eps 2 -delta 1e-5 -sampling 0.05 -steps 500
ofl -seed 1 -reps 2 -rounds 200 -quiet -json -out d
ofl -seed 2 -reps 2 -rounds 100 -quiet -json -out d -strategy banded:bands=8 -epochs 2
ofl -seed 3 -reps 2 -rounds 100 -quiet -json -out d -algo independent -secure-aggregation
mkdir testdata && cp "$SAMEBITS_ROOT/testdata/breast_cancer.csv" testdata/ && ofl reproduce all -out r -quick -quiet
dpaudit replay -rounds 40 -strategy blt:buffers=2 -participation epochs:2 -json
dpaudit canary -rounds 40 -canaries 200 -json -out c
mfsolve -R 0
EOF
	} >"$tmp/cases"
fi
export SAMEBITS_ROOT="$root"
extra=${SAMEBITS_MASK:-}
mask() {
	sed -E -e 's/"seconds": ?[0-9.e+-]+/"seconds":T/g; s/seconds=[0-9.e+-]+/seconds=T/g' \
		-e 's/\| [0-9.]+ \|$/| T |/; s/ [0-9.]+s (PASS|FAIL)/ Ts \1/; s/ UTC in [0-9.]+s/ UTC in Ts/' \
		-e "${extra:-s/^//}" "$1"
}
same() { # same FILE1 FILE2: equal bytes, after the masks for text files
	case $1 in
	*.npy | *.png) cmp -s "$1" "$2" ;;
	*) mask "$1" >"$tmp/m1" && mask "$2" >"$tmp/m2" && cmp -s "$tmp/m1" "$tmp/m2" ;;
	esac
}
n=0
bad=0
while IFS= read -r line; do
	case $line in '' | '#'*) continue ;; esac
	n=$((n + 1))
	for b in old new; do
		mkdir -p "$tmp/$b.$n/run"
		(cd "$tmp/$b.$n/run" && PATH="$tmp/$b:$PATH" sh -c "$line" </dev/null >../out 2>../err; echo $? >../rc) || true
	done
	d=""
	for f in out err rc; do
		same "$tmp/old.$n/$f" "$tmp/new.$n/$f" || d="$d $f"
	done
	(cd "$tmp/old.$n/run" && find . -type f | sort) >"$tmp/l1"
	(cd "$tmp/new.$n/run" && find . -type f | sort) >"$tmp/l2"
	cmp -s "$tmp/l1" "$tmp/l2" || d="$d (different files written)"
	while IFS= read -r f; do
		[ -f "$tmp/new.$n/run/$f" ] && { same "$tmp/old.$n/run/$f" "$tmp/new.$n/run/$f" || d="$d $f"; }
	done <"$tmp/l1"
	if [ -n "$d" ]; then
		bad=$((bad + 1))
		echo "DIFF [$n] $line:$d"
	else
		echo "same [$n] $line (exit $(cat "$tmp/new.$n/rc"))"
	fi
done <"$tmp/cases"
echo "$n cases, $bad differ; outputs in $tmp (old.N and new.N)"
[ "$bad" -eq 0 ]
