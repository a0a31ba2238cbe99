#!/usr/bin/env bash
# Measures observer variants ("levers") against each other on a cluster the scale bench filled and
# kept (SCALE_KEEP_CLUSTER=1, or a wrapper that holds it): the variants run alternately, one process
# at a time under /usr/bin/time -v, LEVERS_ROUNDS rounds (5), each after the machine is quiet, and the
# script prints the median wall time, CPU, peak RSS and requests of each, and its ratio to the first.
#
#   bash hack/scalebench/levers.sh RUN_DIR/SIZE "base=-parallel 1" "parallel=-parallel 4" "watch=-watch-list"
#
# A variant is NAME=FLAGS for e2e/scalebench/observer (built from this tree), or NAME=@BINARY FLAGS to
# run another observer binary (one built from an experiment's tree). istioctl x precheck runs too, as
# the reference. Results are kept in SIZE/levers-<time>/ (LEVERS_OUT names the folder instead), the
# table in its summary.md. LEVERS_QUIET_CORES (0.5), LEVERS_QUIET_WAIT (60 s), LEVERS_PIDS_DIR: see
# wait_quiet.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(cd "$1" && pwd)
shift
[ $# -gt 0 ] || { echo "usage: levers.sh SIZE_DIR NAME=FLAGS..." >&2; exit 2; }
rounds=${LEVERS_ROUNDS:-5}
out=${LEVERS_OUT:-"$dir/levers-$(date +%H%M%S)"}
mkdir -p "$out"
go build -tags e2e -trimpath -o "$out/observer" "$root/e2e/scalebench/observer"
istioctl=${ISTIOCTL:-$(bash "$root/hack/istio/build.sh" istioctl 2>/dev/null | tail -n 1)}
# cpu_busy: busy CPU ticks, niced ones left out: a nice-19 process (someone's tests) barely takes
# the CPU from the measured one, and waiting for it to end would wait for ever on a shared machine.
cpu_busy() { awk '/^cpu /{print $2+$4+$7+$8+$9}' /proc/stat; }
# cp_cpu: the CPU ticks of the cluster's own processes when LEVERS_PIDS_DIR names kwokctl's pid folder
# (scale-bench.sh sets it): a big cluster is never idle, so only the rest of the machine must be quiet.
cp_cpu() {
  local t=0 f pid v
  for f in "${LEVERS_PIDS_DIR:-/nonexistent}"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null) || continue
    v=$(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null) || v=0
    t=$((t + ${v:-0}))
  done
  echo "$t"
}
wait_quiet() { # the rest of the machine under LEVERS_QUIET_CORES (0.5; the cluster included unless LEVERS_PIDS_DIR) for a second
  local deadline=$((SECONDS + ${LEVERS_QUIET_WAIT:-60})) b0 c0
  while [ "$SECONDS" -lt "$deadline" ]; do
    b0=$(cpu_busy) c0=$(cp_cpu); sleep 1
    awk -v u="$(( $(cpu_busy) - b0 - $(cp_cpu) + c0 ))" -v hz="$(getconf CLK_TCK)" -v q="${LEVERS_QUIET_CORES:-0.5}" 'BEGIN{exit !(u/hz < q)}' && return 0
  done
  echo "levers: the machine did not get quiet within ${LEVERS_QUIET_WAIT:-60}s; measuring anyway" >&2
}
names=()
for v in "$@"; do names+=("${v%%=*}"); done
for i in $(seq 1 "$rounds"); do
  for v in "$@"; do
    n=${v%%=*} spec=${v#*=} bin="$out/observer"
    if [ "${spec#@}" != "$spec" ]; then bin=${spec#@}; bin=${bin%% *}; spec=${spec#@"$bin"}; fi
    wait_quiet
    # shellcheck disable=SC2086 # spec is a list of flags
    /usr/bin/time -v -o "$out/$n-$i.time" "$bin" -kubeconfig "$dir/kubeconfig-ambientkit" -out "$out/$n-$i.json" $spec 2>"$out/$n-$i.err" || true
    sleep 2
  done
  wait_quiet
  /usr/bin/time -v -o "$out/precheck-$i.time" "$istioctl" x precheck --kubeconfig "$dir/kubeconfig-istioctl" >/dev/null 2>&1 || true
  sleep 2
  echo "levers: round $i/$rounds done" >&2
done
rows() { # NAME: one line per round: wall cpu rss requests
  local n=$1
  for i in $(seq 1 "$rounds"); do
    awk -F': ' '/Elapsed/{k=split($2,a,":"); w=a[k]+(k>1?a[k-1]*60:0)} /User time/{u=$2} /System time/{s=$2} /Maximum resident/{m=$2/1024} END{printf "%.3f %.3f %.1f", w, u+s, m}' "$out/$n-$i.time"
    if [ -f "$out/$n-$i.json" ]; then sed -n 's/^  "httpRequests": \([0-9]*\),$/ \1/p' "$out/$n-$i.json"; else echo " -"; fi
  done
}
col() { # NAME COLUMN: median, min, max of a column
  rows "$1" | awk -v c="$2" '{print $c}' | sort -n | awk '{v[NR]=$1} END{printf "%s %s %s\n", v[int((NR+1)/2)], v[1], v[NR]}'
}
summ() { # NAME: median wall, cpu, rss, requests, wall min, wall max
  local w lo hi c m r
  read -r w lo hi < <(col "$1" 1)
  read -r c _ _ < <(col "$1" 2)
  read -r m _ _ < <(col "$1" 3)
  read -r r _ _ < <(col "$1" 4)
  echo "$w $c $m $r $lo $hi"
}
read -r w0 _ m0 _ < <(summ "${names[0]}")
{
printf '| variant | wall s (median) | range | CPU s | peak RSS MiB | requests | wall ÷ first | RSS ÷ first |\n|---|---:|---|---:|---:|---:|---:|---:|\n'
for n in "${names[@]}" precheck; do
  read -r w c m r lo hi < <(summ "$n")
  printf '| %s | %.2f | %.2f–%.2f | %.2f | %.1f | %s | %.2f | %.2f |\n' "$n" "$w" "$lo" "$hi" "$c" "$m" "$r" "$(awk -v a="$w" -v b="$w0" 'BEGIN{print a/b}')" "$(awk -v a="$m" -v b="$m0" 'BEGIN{print a/b}')"
done
} | tee "$out/summary.md"
