#!/usr/bin/env bash
# Run every benchmark in sequence (see bench/README.md). The peer venv is set up first
# (idempotent). Extra arguments are ignored; run a bench directly to pass options.
# A bench that fails is reported and the others still run; the exit code is 1 if any failed.
# Run from anywhere; uses the python on PATH (rolleval's environment).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python}"

bash "$HERE/peers/setup.sh" || echo "peer setup failed: the peer sides will be skipped"

failed=()
for bench in bench_metrics bench_bootstrap bench_report bench_compare bench_client bench_scale bench_import bench_grading bench_throughput; do
    [[ -f "$HERE/$bench.py" ]] || continue
    echo
    echo "=== $bench ($(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)) ==="
    if ! "$PY" "$HERE/$bench.py"; then
        failed+=("$bench")
    fi
done
echo
if ((${#failed[@]})); then
    echo "failed: ${failed[*]}"
    exit 1
fi
echo "all benches ran"
