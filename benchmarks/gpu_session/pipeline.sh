#!/usr/bin/env bash
# A GPU session's work, run detached on the lent machine after `source benchmarks/gpu_session/bootstrap.sh`
# (it inherits PYTHONPATH and SBFN_DATA_DIR from that shell):
#
#   mkdir -p /tmp/pipe && setsid nohup bash benchmarks/gpu_session/pipeline.sh [PLAN] </dev/null >/dev/null 2>&1 &
#
# PLAN (default benchmarks/gpu_session/plan.txt): lines `DEADLINE_S COMMAND...`, run in order
# ('#' comments and blank lines skipped). Each COMMAND is plain shell (bash -c) under `timeout`,
# stopped at T0 + DEADLINE_S (T0: this script's start) or at the epoch second written in $P/END
# if that comes first (write it any time); SIGKILL follows GRACE_S later. A step whose end has
# passed is skipped, so time a step leaves unused goes to the next ones.
# Log: $P/log, a line `=== HH:MM:SS +Ns ...` before and after each step, the step's output between.
# After each step: $P/out/runs.tgz ($RUNS without */tune/*) and $P/out/log, so any call can return
#   tar -czf $OUT/out.tgz -C /tmp/pipe out
# $P/DONE appears at the end. Stop it early: pkill -s "$(cat /tmp/pipe/pid)" (its session only).
# Overrides: P (/tmp/pipe), RUNS (/tmp/runs), GRACE_S (40: a GPU sweep stopped by its deadline
# merged its results at once but took over 15 s to stop Ray and its 4 workers, and SIGKILL then
# lost the benchmark's summary; 2026-11-27, H200).
set -u
P=${P:-/tmp/pipe}; RUNS=${RUNS:-/tmp/runs}; GRACE_S=${GRACE_S:-40}
PLAN=${1:-benchmarks/gpu_session/plan.txt}
mkdir -p "$P/out" "$RUNS"; rm -f "$P/DONE"; echo $$ > "$P/pid"    # started by setsid: $$ is its session
exec >> "$P/log" 2>&1 < /dev/null
export PYTHONUNBUFFERED=1
T0=$(date +%s)
say() { echo "=== $(date +%T) +$(( $(date +%s) - T0 ))s $*"; }
pack() {
    tar -czf "$P/out/runs.tgz.part" --exclude='*/tune/*' -C "$(dirname "$RUNS")" "$(basename "$RUNS")"
    [ $? -le 1 ] && mv "$P/out/runs.tgz.part" "$P/out/runs.tgz"    # 1: a file changed while read
    cp "$P/log" "$P/out/log"
}

[ -f "$PLAN" ] || { say "no plan $PLAN"; exit 1; }
say "start: plan $PLAN; PYTHONPATH=${PYTHONPATH:-unset} SBFN_DATA_DIR=${SBFN_DATA_DIR:-unset}"
mapfile -t steps < <(grep -vE '^[[:space:]]*(#|$)' "$PLAN")
n=0
for line in "${steps[@]}"; do
    n=$((n + 1))
    read -r deadline cmd <<< "$line"
    [[ $deadline =~ ^[0-9]+$ ]] || { say "step $n: no DEADLINE_S, skipped: $line"; continue; }
    end=$((T0 + deadline))
    cap=$(cat "$P/END" 2>/dev/null) && [[ $cap =~ ^[0-9]+$ ]] && [ "$cap" -lt $end ] && end=$cap
    left=$((end - $(date +%s)))
    if [ $left -le 0 ]; then say "step $n skipped (its end, +$((end - T0))s, has passed): $cmd"; continue; fi
    say "step $n (until +$((end - T0))s): $cmd"
    timeout -k "$GRACE_S" $left bash -c "$cmd"
    rc=$?
    case $rc in 124) why=" (timed out)" ;; 137) why=" (SIGKILL: still running ${GRACE_S}s after its timeout, or out of memory)" ;; *) why="" ;; esac
    say "step $n exit $rc$why"
    pack
done
say done
pack
touch "$P/DONE"
