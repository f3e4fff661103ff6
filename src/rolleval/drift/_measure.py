"""Teacher forcing against two endpoints: :func:`measure_drift` (the I/O of ``rolleval drift``).

Each side is an OpenAI-compatible endpoint (``http(s)://.../v1``) or a ``.gguf`` file that
rolleval serves itself (:class:`rolleval._local._launcher.LocalServer`, one process per
side). Both sides are probed first, as for log-likelihood tasks
(:func:`rolleval.client._logprob_probe.require_prompt_logprobs`: a server whose prompt
log-probs are missing, inconsistent or shifted is refused, exit 2). Then every text is sent
to both sides as one echoed ``/v1/completions`` request (``echo``, ``logprobs: K``,
``max_tokens: 1``); a side rolleval serves is also asked for token ids and full-vocabulary
log-probs (the opt-in ``"rolleval"`` field of :mod:`rolleval._local._serve`), so it is
scored exactly. The per-token mathematics is pure (:mod:`._tokens`, :mod:`._math`).

With :attr:`DriftOptions.continuation` (``rolleval drift --task T``, the default
``--continuation sampled``) each text is a prompt: before scoring, the baseline continues it
once (one ``/v1/completions`` request per prompt, the seed derived from
:attr:`SampledContinuation.seed` and the text id), and both sides then score the prompt
followed by that continuation.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..errors import RunError, UsageError
from ._result import DriftMethod, DriftResult, summarize
from ._scores import parse_side
from ._tokens import TextFigures, compare_text

__all__ = [
    "DEFAULT_THRESHOLD",
    "DEFAULT_TOP_LOGPROBS",
    "TAIL_RULE",
    "DriftOptions",
    "DriftSide",
    "SampledContinuation",
    "measure_drift",
]

#: Default threshold on the mean KL divergence, nats per token (docs/contract.md, "Drift").
DEFAULT_THRESHOLD = 0.01
#: Default K of the top-K lists asked for (vLLM's default cap on ``logprobs``).
DEFAULT_TOP_LOGPROBS = 20
#: Below this K a top-K side gets a warning (its KL is a lower bound, measurably low).
SMALL_K = 100

#: Below this mean baseline mass outside the compared tokens a top-K side gets no warning at
#: K >= SMALL_K (docs/contract.md, "Drift": the bound's error grows with that mass).
SMALL_TAIL = 0.01

TAIL_RULE = (
    "capped tail: the tokens listed on both sides one by one; a token only one side lists "
    "(by id) kept apart, its probability on the other side at most that side's smallest "
    "listed one; everything else one tail bucket (mass 1 - sum on each side); the KL is the "
    "smallest any distributions consistent with this can have: a lower bound on the exact "
    "KL (log-sum inequality), exact where both sides send the full vocabulary; tokens "
    "matched by text: the merged tail (no caps)"
)

#: Measured error of the capped tail, both sides top-K, on the embedded model
#: (bench/bench_drift_tail.py): K -> percent below the exact mean KL divergence.
MEASURED_LOW = {20: 29, 100: 16, 200: 12}


@dataclass(frozen=True)
class DriftSide:
    """One side: an endpoint URL (``model`` and ``api_key_env`` as for ``rolleval run``) or a
    path to a ``.gguf`` file rolleval serves (``model`` ignored)."""

    target: str
    model: str | None = None
    api_key_env: str | None = None
    full_logprobs: bool = False
    """The endpoint is rolleval's own server (``python -m rolleval._local._serve``): ask it
    for full-vocabulary log-probs (the opt-in ``"rolleval"`` request field) and score this
    side exactly. Always on for a ``.gguf`` side."""
    token_ids: bool = False
    """The endpoint is rolleval's own server: ask for token ids with the top-K lists (the
    opt-in ``"rolleval": {"token_ids": true}``), so alternatives are matched by id."""

    def extra_body(self) -> dict[str, Any] | None:
        """The opt-in request field of rolleval's server, when this side asks for one."""
        if self.is_gguf or self.full_logprobs:
            return {"rolleval": {"full_logprobs": True}}
        if self.token_ids:
            return {"rolleval": {"token_ids": True}}
        return None

    @property
    def is_gguf(self) -> bool:
        return not self.target.startswith(("http://", "https://"))

    def check(self, name: str) -> None:
        if self.is_gguf:
            path = Path(self.target)
            if path.suffix != ".gguf":
                raise UsageError(
                    f"--{name} {self.target!r}: give an endpoint URL (http://.../v1) or a .gguf file"
                )
            if not path.is_file():
                raise UsageError(f"--{name} {self.target}: file not found")


#: Sampling settings sent to rolleval's own server besides temperature and top_p, so the
#: continuation is drawn from the model's whole distribution (llama-cpp-python's server
#: defaults are top_k 40, min_p 0.05 and repeat_penalty 1.1).
OWN_SERVER_SAMPLING = {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}


@dataclass(frozen=True)
class SampledContinuation:
    """How the baseline continues each prompt before both sides score it.

    One continuation per prompt, from the baseline, at ``temperature`` and ``top_p`` (1.0 and
    1.0: the model's own distribution, so the summed per-token KL divergence along the
    continuation estimates the KL divergence between the two models' continuations), at
    most ``max_tokens`` tokens, with the seed :meth:`seed_of` (``derive_seed(seed, text id,
    0)``, as ``rolleval run`` derives a rollout's seed). A side that is rolleval's own server
    also gets :data:`OWN_SERVER_SAMPLING`; another server applies its own defaults for every
    setting not sent (recorded as sent in ``method.continuation``).
    """

    seed: int = 0
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 128

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int):
            raise UsageError(f"max_tokens must be an integer >= 1, got {self.max_tokens!r}")
        if self.max_tokens < 1:
            raise UsageError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not (isinstance(self.temperature, (int, float)) and self.temperature >= 0):
            raise UsageError(f"temperature must be a number >= 0, got {self.temperature!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise UsageError(f"top_p must be in (0, 1], got {self.top_p!r}")

    def seed_of(self, text_id: str) -> int:
        """The sampling seed of one prompt's continuation."""
        from .._runner._schedule import derive_seed

        return derive_seed(self.seed, text_id, 0)

    def request_fields(self, own_server: bool) -> dict[str, Any]:
        """The sampling fields of a continuation request (besides prompt, model, seed)."""
        fields: dict[str, Any] = {
            "temperature": float(self.temperature),
            "top_p": float(self.top_p),
            "max_tokens": self.max_tokens,
        }
        if own_server:
            fields.update(OWN_SERVER_SAMPLING)
        return fields


@dataclass(frozen=True)
class DriftOptions:
    """Settings of one drift measurement."""

    top_logprobs: int = DEFAULT_TOP_LOGPROBS
    threshold: float = DEFAULT_THRESHOLD
    confidence_level: float = 0.95
    n_resamples: int = 10_000
    rng: int = 0
    """Seed of the bootstrap (recorded as ``method.seed``)."""
    concurrency: int = 2
    timeout_s: float = 300.0
    server_options: dict[str, Any] = field(default_factory=lambda: {"n_threads": 2})
    """llama.cpp server settings of a ``.gguf`` side (as ``--server-option`` of ``run``)."""
    probe: bool = True
    continuation: SampledContinuation | None = None
    """When set, every text is a prompt that the baseline continues (one sampled
    continuation each) before both sides score prompt and continuation."""
    power: float = 0.8
    """Power of the texts-needed planning figure (``planning.texts_needed``)."""

    def __post_init__(self) -> None:
        if isinstance(self.top_logprobs, bool) or not isinstance(self.top_logprobs, int):
            raise UsageError(f"top_logprobs must be an integer >= 1, got {self.top_logprobs!r}")
        if self.top_logprobs < 1:
            raise UsageError(f"top_logprobs must be >= 1, got {self.top_logprobs}")
        if not (isinstance(self.threshold, (int, float)) and self.threshold >= 0):
            raise UsageError(f"threshold must be a number >= 0 (nats), got {self.threshold!r}")
        if not 0 < self.confidence_level < 1:
            raise UsageError(f"confidence_level must be in (0, 1), got {self.confidence_level!r}")


@dataclass
class _Live:
    """A side ready for requests."""

    name: str
    side: DriftSide
    base_url: str
    model: str
    full: bool
    info: dict[str, Any]


def _model_of(base_url: str, side: DriftSide, name: str, timeout_s: float) -> str:
    if side.model:
        return side.model
    from ..client._client import read_api_key

    key = read_api_key(side.api_key_env) if side.api_key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        data = httpx.get(
            base_url.rstrip("/") + "/models", timeout=timeout_s, headers=headers
        ).json()
        ids = [m["id"] for m in data["data"]]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"--{name} {base_url}: could not list its models ({exc}); give --{name}-model"
        ) from None
    if len(ids) != 1:
        raise UsageError(f"--{name} {base_url} serves {len(ids)} models; give --{name}-model")
    return str(ids[0])


@contextlib.contextmanager
def _open_side(name: str, side: DriftSide, options: DriftOptions) -> Iterator[_Live]:
    if not side.is_gguf:
        base = side.target.rstrip("/")
        model = _model_of(base, side, name, options.timeout_s)
        info = {"endpoint": base, "model": model}
        yield _Live(name, side, base, model, side.full_logprobs, info)
        return
    from .._local._launcher import LOCAL_MODEL_NAME, LocalServer, LocalServerOptions

    server = LocalServer(
        LocalServerOptions(model_path=side.target, server_options=dict(options.server_options))
    )
    with server:
        info = {"gguf": str(Path(side.target).resolve()), **server.provenance()}
        yield _Live(name, side, server.base_url, LOCAL_MODEL_NAME, True, info)


def _probe(live: _Live, options: DriftOptions) -> None:
    from ..client._client import read_api_key
    from ..client._logprob_probe import require_prompt_logprobs

    key = read_api_key(live.side.api_key_env) if live.side.api_key_env else None
    require_prompt_logprobs(live.base_url, live.model, api_key=key, timeout_s=options.timeout_s)


async def _score_all(
    sides: tuple[_Live, _Live], texts: Sequence[tuple[str, str]], options: DriftOptions
) -> list[TextFigures]:
    from ..client import Client, EndpointConfig

    def config(live: _Live) -> EndpointConfig:
        return EndpointConfig(
            base_urls=(live.base_url,),
            model=live.model,
            api="completions",
            api_key_env=live.side.api_key_env,
            timeout_s=options.timeout_s,
            concurrency=options.concurrency,
            max_retries=2,
        )

    gate = asyncio.Semaphore(options.concurrency)
    async with Client(config(sides[0])) as b_client, Client(config(sides[1])) as c_client:

        async def one(live: _Live, client: Client, text_id: str, text: str) -> Any:
            data, done = await client.echo(
                text, top_logprobs=options.top_logprobs, extra_body=live.side.extra_body()
            )
            if data is None or done.status != "ok":
                raise RunError(f"--{live.name} {live.base_url}: text {text_id!r}: {done.error}")
            try:
                return parse_side(data, text)
            except (ValueError, KeyError, TypeError) as exc:
                raise RunError(
                    f"--{live.name} {live.base_url}: text {text_id!r}: unusable log-probs: {exc}"
                ) from None

        async def pair(text_id: str, text: str) -> TextFigures:
            async with gate:
                b, c = await asyncio.gather(
                    one(sides[0], b_client, text_id, text), one(sides[1], c_client, text_id, text)
                )
                return compare_text(b, c, text_id)

        return list(await asyncio.gather(*(pair(i, t) for i, t in texts)))


async def _continue(
    live: _Live, texts: Sequence[tuple[str, str]], options: DriftOptions
) -> list[dict[str, Any]]:
    """One sampled continuation of each prompt from ``live`` (the baseline)."""
    from ..client import Client, EndpointConfig, SamplingParams

    spec = options.continuation
    assert spec is not None
    own = live.full or live.side.token_ids
    fields = spec.request_fields(own)
    sampling = SamplingParams(
        temperature=fields.pop("temperature"),
        top_p=fields.pop("top_p"),
        max_tokens=fields.pop("max_tokens"),
        extra_body=fields,
    )
    config = EndpointConfig(
        base_urls=(live.base_url,),
        model=live.model,
        api="completions",
        api_key_env=live.side.api_key_env,
        timeout_s=options.timeout_s,
        concurrency=options.concurrency,
        max_retries=2,
    )
    async with Client(config) as client:

        async def one(text_id: str, prompt: str) -> dict[str, Any]:
            seed = spec.seed_of(text_id)
            done = await client.complete(prompt, sampling, seed=seed)
            if done.status != "ok":
                raise RunError(
                    f"--{live.name} {live.base_url}: continuing text {text_id!r}: {done.error}"
                )
            return {
                "id": text_id,
                "seed": seed,
                "text": done.text or "",
                "finish_reason": done.finish_reason,
                "completion_tokens": done.completion_tokens,
            }

        return list(await asyncio.gather(*(one(i, t) for i, t in texts)))


def _continuation_method(spec: SampledContinuation | None, live: _Live) -> dict[str, Any]:
    if spec is None:
        return {"kind": "none"}
    return {
        "kind": "sampled",
        "by": "baseline",
        "seed": spec.seed,
        "seed_rule": (
            "rolleval's rollout seed of index 0: the low 31 bits of the first four bytes of "
            "sha256('<seed>\\x00<text id>\\x00<0>')"
        ),
        "sent": spec.request_fields(live.full or live.side.token_ids),
    }


def _tail_warnings(lives: Sequence[_Live], k: int, figures: Sequence[TextFigures]) -> list[str]:
    """A warning for each top-K side when K is small for the model: K below ``SMALL_K``,
    or the baseline's mean probability outside the compared tokens above ``SMALL_TAIL``."""
    tails = [float(x) for f in figures for x in f.baseline_tail]
    tail = sum(tails) / len(tails) if tails else 0.0
    out = []
    for live in lives:
        if live.full or (k >= SMALL_K and tail <= SMALL_TAIL):
            continue
        out.append(
            f"the {live.name} sends top-{k} log-probs only: the KL divergence is a lower bound; "
            f"here the baseline puts {tail:.3f} of its probability, on average, outside the "
            f"compared tokens (measured on the embedded model, both sides top-K: "
            + ", ".join(f"{v}% low at K={key}" for key, v in MEASURED_LOW.items())
            + "); ask for more with --top-logprobs, or score a .gguf side exactly"
        )
    return out


def _scoring(live: _Live, k: int) -> str:
    return "full vocabulary" if live.full else f"top-{k}"


def measure_drift(
    baseline: DriftSide | str,
    candidate: DriftSide | str,
    texts: Sequence[tuple[str, str]],
    options: DriftOptions | None = None,
) -> DriftResult:
    """Token-level drift of ``candidate`` against ``baseline`` on ``texts`` (``(id, text)``
    pairs, e.g. from :func:`load_texts`): per-token KL(P_baseline || P_candidate), top-1
    agreement and delta NLL, per-text means, the mean over texts with a bootstrap interval,
    and the verdict against ``options.threshold`` on the mean KL divergence."""
    options = options or DriftOptions()
    b_side = baseline if isinstance(baseline, DriftSide) else DriftSide(baseline)
    c_side = candidate if isinstance(candidate, DriftSide) else DriftSide(candidate)
    b_side.check("baseline")
    c_side.check("candidate")
    if not texts:
        raise UsageError("no texts to score")
    with (
        _open_side("baseline", b_side, options) as b,
        _open_side("candidate", c_side, options) as c,
    ):
        if options.probe:
            _probe(b, options)
            _probe(c, options)
        continuations: list[dict[str, Any]] = []
        if options.continuation is not None:
            continuations = asyncio.run(_continue(b, texts, options))
            texts = [
                (i, t + cont["text"]) for (i, t), cont in zip(texts, continuations, strict=True)
            ]
        figures = asyncio.run(_score_all((b, c), texts, options))
        warnings = _tail_warnings((b, c), options.top_logprobs, figures)
        keyed = " and ".join(sorted({f.keyed_by for f in figures})) or "none"
        method = DriftMethod(
            top_logprobs=options.top_logprobs,
            baseline_scoring=_scoring(b, options.top_logprobs),
            candidate_scoring=_scoring(c, options.top_logprobs),
            keyed_by=keyed,
            tail_rule="none (exact)" if b.full and c.full else TAIL_RULE,
            interval=(
                "percentile bootstrap over texts of the per-text means "
                "(rolleval.stats.bootstrap_ci)"
            ),
            confidence_level=options.confidence_level,
            n_resamples=options.n_resamples,
            seed=options.rng,
            threshold=float(options.threshold),
            continuation=_continuation_method(options.continuation, b),
            power=options.power,
        )
        return summarize(
            [i for i, _ in texts],
            figures,
            method,
            baseline=b.info,
            candidate=c.info,
            warnings=warnings,
            continuations=continuations,
        )
