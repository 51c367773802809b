"""A simulated inference engine (vLLM or SGLang): deterministic text that names the served model,
real token counts, a concurrency limit with a waiting queue, and the engine's own Prometheus
metrics (names, labels and types as vLLM's v1 `PrometheusStatLogger` and SGLang's
`SchedulerMetricsCollector` register them; rendered by prometheus_client, as the engines do).

Generation takes real time (time to first token, then one token every ITL seconds): it is what a
client feels, so it is not scaled by SANDBOX_SPEEDUP.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .commands import ServeSpec

ITL_SECONDS = 0.012  # inter-token latency of a small model on one GPU
TTFT_BASE = 0.02
TTFT_PER_PROMPT_TOKEN = 0.00005
DEFAULT_MAX_LEN = 32768
KV_CAPACITY_TOKENS = 400_000

_WORDS = (
    "the model reads your prompt and answers it token by token while the scheduler batches requests "
    "together so that every GPU stays busy and the cache keeps the prefixes it has already seen"
).split()
_TOKEN = re.compile(r"\w+|[^\w\s]")
_PIECE = re.compile(r"\s?\w+|\s?[^\w\s]")  # tokens that join back into the exact text
_VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0]
_VLLM_E2E = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0]
_ITL = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0]


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text or ""))


def chat_prompt_tokens(messages: list[dict]) -> int:
    """Tokens after the chat template: the content plus the template's per-message markers."""
    n = 3
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        n += 4 + count_tokens(str(content or ""))
    return n


@dataclass
class Generation:
    """One request's answer, decided up front (deterministic per prompt and model)."""

    tokens: list[str]
    finish_reason: str
    prompt_tokens: int

    @property
    def text(self) -> str:
        return "".join(self.tokens)


class Engine:
    """State and metrics of one serving process."""

    def __init__(self, spec: ServeSpec, max_len: int | None, pod_ip: str) -> None:
        self.spec = spec
        self.max_len = spec.max_model_len or max_len or DEFAULT_MAX_LEN
        self.pod_ip = pod_ip
        self.created = int(time.time())
        self.running = 0
        self.waiting = 0
        self.used_tokens = 0
        self.prefixes: set[str] = set()
        self.access_log: deque[str] = deque(maxlen=2000)
        self._sem: asyncio.Semaphore | None = None
        self.registry = CollectorRegistry()
        self._metrics()

    # ------------------------------------------------------------ metrics

    def _metrics(self) -> None:
        r = self.registry
        name = self.spec.name
        if self.spec.engine == "sglang":
            labels = {"model_name": name, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}
            ln = list(labels)

            def g(n: str, doc: str) -> Gauge:
                return Gauge(f"sglang:{n}", doc, ln, registry=r).labels(**labels)

            self.g_running = g("num_running_reqs", "The number of running requests.")
            self.g_waiting = g("num_queue_reqs", "The number of requests in the waiting queue.")
            self.g_used = g("num_used_tokens", "The number of used tokens.")
            self.g_usage = g("token_usage", "The token usage.")
            self.g_throughput = g("gen_throughput", "The generation throughput (token/s).")
            self.g_hit_rate = g("cache_hit_rate", "The prefix cache hit rate.")
            self.c_prompt = Counter("sglang:prompt_tokens", "Number of prefill tokens processed.", ln, registry=r)
            self.c_prompt = self.c_prompt.labels(**labels)
            self.c_gen = Counter("sglang:generation_tokens", "Number of generation tokens processed.", ln, registry=r)
            self.c_gen = self.c_gen.labels(**labels)
            self.c_requests = Counter("sglang:num_requests", "The number of processed requests.", ln, registry=r)
            self.c_requests = self.c_requests.labels(**labels)
            self.h_ttft = Histogram(
                "sglang:time_to_first_token_seconds",
                "Histogram of time to first token in seconds.",
                ln,
                buckets=_VLLM_TTFT,
                registry=r,
            ).labels(**labels)
            self.h_e2e = Histogram(
                "sglang:e2e_request_latency_seconds",
                "Histogram of End-to-end request latency in seconds",
                ln,
                buckets=_VLLM_E2E,
                registry=r,
            ).labels(**labels)
            self.h_itl = Histogram(
                "sglang:inter_token_latency_seconds",
                "Histogram of inter-token latency in seconds.",
                ln,
                buckets=_ITL,
                registry=r,
            ).labels(**labels)
            self.c_success = None
            self.c_cache_q = self.c_cache_h = None
            return
        labels = {"model_name": name, "engine": "0"}
        ln = list(labels)
        self.g_running = Gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches.", ln, registry=r
        ).labels(**labels)
        self.g_waiting = Gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed.", ln, registry=r
        ).labels(**labels)
        self.g_usage = Gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", ln, registry=r)
        self.g_usage = self.g_usage.labels(**labels)
        self.g_used = self.g_throughput = self.g_hit_rate = None
        self.c_cache_q = Counter(
            "vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", ln, registry=r
        ).labels(**labels)
        self.c_cache_h = Counter(
            "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", ln, registry=r
        ).labels(**labels)
        Counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", ln, registry=r).labels(
            **labels
        )
        self.c_prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", ln, registry=r)
        self.c_prompt = self.c_prompt.labels(**labels)
        self.c_gen = Counter("vllm:generation_tokens", "Number of generation tokens processed.", ln, registry=r)
        self.c_gen = self.c_gen.labels(**labels)
        self.c_success = Counter(
            "vllm:request_success", "Count of successfully processed requests.", ln + ["finished_reason"], registry=r
        )
        for reason in ("stop", "length", "abort"):
            self.c_success.labels(name, "0", reason)
        self.c_requests = None
        self.h_prompt = Histogram(
            "vllm:request_prompt_tokens",
            "Number of prefill tokens processed.",
            ln,
            buckets=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000],
            registry=r,
        ).labels(**labels)
        self.h_gen = Histogram(
            "vllm:request_generation_tokens",
            "Number of generation tokens processed.",
            ln,
            buckets=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000],
            registry=r,
        ).labels(**labels)
        self.h_ttft = Histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            ln,
            buckets=_VLLM_TTFT,
            registry=r,
        ).labels(**labels)
        self.h_itl = Histogram(
            "vllm:inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            ln,
            buckets=_ITL,
            registry=r,
        ).labels(**labels)
        self.h_e2e = Histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            ln,
            buckets=_VLLM_E2E,
            registry=r,
        ).labels(**labels)

    def metrics_text(self) -> bytes:
        self.g_running.set(self.running)
        self.g_waiting.set(self.waiting)
        self.g_usage.set(min(1.0, self.used_tokens / KV_CAPACITY_TOKENS))
        if self.g_used is not None:
            self.g_used.set(self.used_tokens)
        return generate_latest(self.registry)

    # ------------------------------------------------------------ generation

    def answer(self, prompt_text: str, prompt_tokens: int, max_tokens: int | None) -> Generation:
        seed = int(hashlib.sha256((self.spec.name + "\0" + prompt_text).encode()).hexdigest()[:12], 16)
        quoted = " ".join(prompt_text.split()[:8])
        text = f'This is {self.spec.name} answering from the InstantStart sandbox. You wrote: "{quoted}".'
        for i in range(8 + seed % 24):
            text += " " + _WORDS[(seed + i * 7) % len(_WORDS)]
        tokens = _PIECE.findall(text + ".")
        limit = self.max_len - prompt_tokens
        cap = min(max_tokens, limit) if max_tokens is not None else limit
        finish = "stop"
        if len(tokens) > cap:
            tokens = tokens[: max(cap, 0)]
            finish = "length"
        return Generation(tokens, finish, prompt_tokens)

    async def run(self, gen: Generation, prefix_key: str) -> AsyncIterator[str]:
        """Yield the answer token by token, holding a batch slot (or waiting for one)."""
        if self._sem is None:
            self._sem = asyncio.Semaphore(max(1, self.spec.max_running))
        started = time.monotonic()
        self.waiting += 1
        try:
            await self._sem.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        self.used_tokens += gen.prompt_tokens
        hit = prefix_key in self.prefixes
        self.prefixes.add(prefix_key)
        if self.c_cache_q is not None:
            self.c_cache_q.inc(gen.prompt_tokens)
            if hit:
                self.c_cache_h.inc(gen.prompt_tokens)
        if self.g_hit_rate is not None:
            self.g_hit_rate.set(0.6 if hit else 0.0)
        produced = 0
        try:
            await asyncio.sleep(TTFT_BASE + gen.prompt_tokens * TTFT_PER_PROMPT_TOKEN * (0.2 if hit else 1.0))
            self.h_ttft.observe(time.monotonic() - started)
            self.c_prompt.inc(gen.prompt_tokens)
            for j, tok in enumerate(gen.tokens):
                if j:
                    await asyncio.sleep(ITL_SECONDS)
                    self.h_itl.observe(ITL_SECONDS)
                produced += 1
                self.used_tokens += 1
                self.c_gen.inc()
                yield tok
            reason = gen.finish_reason
        except (asyncio.CancelledError, ConnectionError):
            reason = "abort"
            raise
        finally:
            self.running -= 1
            self.used_tokens -= gen.prompt_tokens + produced
            self._sem.release()
            elapsed = time.monotonic() - started
            self.h_e2e.observe(elapsed)
            if self.c_success is not None:
                self.c_success.labels(self.spec.name, "0", reason).inc()
                self.h_prompt.observe(gen.prompt_tokens)
                self.h_gen.observe(produced)
            if self.c_requests is not None:
                self.c_requests.inc()
            if self.g_throughput is not None and elapsed > 0:
                self.g_throughput.set(round(produced / elapsed, 2))
