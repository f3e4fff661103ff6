#!/usr/bin/env bash
# Create (or reuse) the peers' virtual environment, bench/.venv-peers, and install the tools
# rolleval is benchmarked against. Nothing here touches rolleval's own environment.
#
#   bash bench/peers/setup.sh            # idempotent: a complete venv is left as it is
#   bash bench/peers/setup.sh --force    # reinstall the pinned versions
#
# Peers (pinned):
#   lm-eval[api]==0.4.13  lm-evaluation-harness: lm_eval.api.metrics.bootstrap_stderr, the
#                         local-chat-completions model (LocalChatCompletion) and the
#                         local-completions model (log-likelihood). 0.4.13 no longer depends on
#                         torch or transformers (both moved to its `hf` extra); none of these
#                         code paths imports torch, so torch is NOT installed. The
#                         constraint file pins torch==2.13.0 (the CPU wheel on this machine's
#                         disk) in case anything ever asks for it: an unpinned torch would pull
#                         a CUDA build of several GB.
#   tracelens==0.7.0      TraceLens: `tracelens compare` on trials files.
#   transformers==5.24.0, tokenizers==0.23.3, gguf==0.19.0
#                         for lm-eval's `local-completions` log-likelihood requests, which need
#                         a Hugging Face tokenizer (bench/bench_loglik_peer.py): none is
#                         reachable here, so bench/peers/lm_eval_loglik.py builds one from the
#                         GGUF file's vocabulary (read with `gguf`, built with `tokenizers`,
#                         loaded by lm-eval through transformers' AutoTokenizer). Tokenizers
#                         only: transformers works without torch for them.
# The `api` extra adds what the API models need (aiohttp, requests, tenacity, tiktoken).
# Environment: PYTHON (default python3.11, else python3), ROLLEVAL_PEERS_VENV (default
# bench/.venv-peers). Takes about 2-3 minutes on 2 cores the first time.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH="$(dirname "$HERE")"
VENV="${ROLLEVAL_PEERS_VENV:-$BENCH/.venv-peers}"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
LM_EVAL_VERSION="0.4.13"
TRACELENS_VERSION="0.7.0"
TOKENIZER_PINS=("transformers==5.24.0" "tokenizers==0.23.3" "gguf==0.19.0")
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

vpy="$VENV/bin/python"

complete() {
    [[ -x "$vpy" ]] && "$vpy" - "$LM_EVAL_VERSION" "$TRACELENS_VERSION" "${TOKENIZER_PINS[@]}" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
assert version("lm-eval") == sys.argv[1] and version("tracelens") == sys.argv[2]
for pin in sys.argv[3:]:
    name, wanted = pin.split("==")
    assert version(name) == wanted, pin
import gguf, tokenizers  # noqa: F401  (lm_eval_loglik.py's tokenizer)
from transformers import PreTrainedTokenizerFast  # noqa: F401
import aiohttp, tenacity  # noqa: F401  (lm-eval's api extra)
from lm_eval.api.metrics import bootstrap_stderr  # noqa: F401
from lm_eval.models.openai_completions import LocalChatCompletion  # noqa: F401
import tracelens.cli.compare  # noqa: F401
EOF
}

show() {
    echo "peer venv: $VENV ($("$vpy" -V 2>&1), $(du -sh "$VENV" | cut -f1))"
    "$vpy" - <<'EOF'
from importlib.metadata import PackageNotFoundError, distributions, version
names = ["lm-eval", "tracelens", "numpy", "datasets", "aiohttp", "requests", "tenacity",
         "pydantic", "transformers", "tokenizers", "gguf", "torch"]
for name in names:
    try:
        print(f"  {name}=={version(name)}")
    except PackageNotFoundError:
        print(f"  {name}: not installed")
print(f"  ({sum(1 for _ in distributions())} distributions in all; "
      "full list: bench/.venv-peers/bin/pip freeze)")
EOF
}

if [[ $FORCE == 0 ]] && complete; then
    echo "peers already installed"
    show
    exit 0
fi

start=$SECONDS
if [[ ! -x "$vpy" ]]; then
    echo "creating $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV"
fi
log="$VENV/install.log"
echo "installing lm-eval[api]==$LM_EVAL_VERSION, tracelens==$TRACELENS_VERSION and ${TOKENIZER_PINS[*]} (log: $log)"
if ! "$vpy" -m pip install --disable-pip-version-check \
    -c "$HERE/constraints.txt" \
    "lm-eval[api]==$LM_EVAL_VERSION" "tracelens==$TRACELENS_VERSION" "${TOKENIZER_PINS[@]}" \
    >"$log" 2>&1; then
    grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -25
    echo "peer install FAILED (full log: $log)" >&2
    exit 1
fi
if ! complete; then
    echo "peer install finished but the peers do not import; see $log" >&2
    exit 1
fi
echo "installed in $((SECONDS - start)) s"
show
