"""Serving simulation: the processes that serving pods run, as real HTTP listeners on 127.0.0.1.

vLLM and SGLang engines (OpenAI-compatible API, Prometheus metrics), the SGLang router, an
in-cluster Prometheus (scrape + HTTP query API with a PromQL subset), and Hugging Face downloads.
`hub.ServingHub` owns them; the Kubernetes emulator reconciles it from pod state every tick.

Nothing is imported here on purpose: modules import what they need (no import cycles through
the package).
"""
