"""The HTTP API of a simulated engine: what vLLM's and SGLang's OpenAI-compatible servers answer.

GET /v1/models, POST /v1/chat/completions, POST /v1/completions (both with `stream: true` as
server-sent events ending in `data: [DONE]`), GET /health, GET /ping + POST /invocations
(SageMaker-style, vLLM and LMI), GET /version, GET /metrics (SGLang only with --enable-metrics),
and SGLang's POST /generate and GET /get_model_info. Error bodies are the engines' own shape.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from aiohttp import web

from .engine import Engine, Generation, chat_prompt_tokens, count_tokens

VLLM_VERSION = "0.10.2"
SGLANG_VERSION = "0.5.2"


def error(status: int, message: str, etype: str = "BadRequestError") -> web.Response:
    body = {"object": "error", "message": message, "type": etype, "param": None, "code": status}
    return web.json_response(body, status=status)


def _owner(engine: Engine) -> str:
    return {"sglang": "sglang", "lmi": "djl"}.get(engine.spec.engine, "vllm")


def make_app(engine: Engine) -> web.Application:
    app = web.Application(client_max_size=32 * 1024 * 1024)
    spec = engine.spec

    @web.middleware
    async def access_log(request: web.Request, handler: Any) -> web.StreamResponse:
        if (
            spec.api_key
            and request.path.startswith("/v1")
            and (request.headers.get("Authorization") != f"Bearer {spec.api_key}")
        ):
            resp: web.StreamResponse = web.json_response({"error": "Unauthorized"}, status=401)
        else:
            resp = await handler(request)
        peer = request.headers.get("X-Forwarded-For") or "10.1.0.1"
        if request.path not in ("/metrics", "/health", "/ping"):
            engine.access_log.append(
                f'INFO:     {peer}:{40000 + len(engine.access_log) % 20000} - "{request.method} {request.path} '
                f'HTTP/1.1" {resp.status} {resp.reason}'
            )
        return resp

    app.middlewares.append(access_log)

    async def health(request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def version(request: web.Request) -> web.Response:
        return web.json_response({"version": SGLANG_VERSION if spec.engine == "sglang" else VLLM_VERSION})

    async def models(request: web.Request) -> web.Response:
        data = [
            {
                "id": n,
                "object": "model",
                "created": engine.created,
                "owned_by": _owner(engine),
                "root": spec.model,
                "parent": None,
                "max_model_len": engine.max_len,
            }
            for n in spec.served_names
        ]
        return web.json_response({"object": "list", "data": data})

    async def metrics(request: web.Request) -> web.Response:
        if spec.engine == "lmi" or (spec.engine == "sglang" and not spec.metrics):
            return web.json_response({"detail": "Not Found"}, status=404)
        return web.Response(body=engine.metrics_text(), content_type="text/plain", charset="utf-8")

    async def body_of(request: web.Request) -> dict | web.Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return error(400, f"JSON decode error: {e}")
        if not isinstance(body, dict):
            return error(400, "Input should be a valid dictionary or object to extract fields from")
        return body

    def check_model(body: dict) -> web.Response | None:
        model = body.get("model")
        if spec.engine == "vllm" and model not in (None, "") and model not in spec.served_names:
            return error(404, f"The model `{model}` does not exist.", "NotFoundError")
        return None

    def check_length(prompt_tokens: int, max_tokens: Any) -> web.Response | None:
        if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
            return error(400, f"max_tokens must be at least 1, got {max_tokens}.")
        want = prompt_tokens + (max_tokens or 0)
        if prompt_tokens >= engine.max_len or want > engine.max_len:
            return error(
                400,
                f"This model's maximum context length is {engine.max_len} tokens. However, you requested "
                f"{want} tokens ({prompt_tokens} in the messages, {max_tokens or 0} in the completion). "
                "Please reduce the length of the messages or completion.",
            )
        return None

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await body_of(request)
        if isinstance(body, web.Response):
            return body
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return error(400, "[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]")
        bad = check_model(body)
        if bad:
            return bad
        prompt_tokens = chat_prompt_tokens(messages)
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        bad = check_length(prompt_tokens, max_tokens)
        if bad:
            return bad
        last = next((m for m in reversed(messages) if m.get("role") == "user"), messages[-1])
        text = str(last.get("content") or "")
        gen = engine.answer(text, prompt_tokens, max_tokens)
        prefix = str(messages[0].get("content"))[:200]
        return await respond(request, body, gen, prefix, chat=True)

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await body_of(request)
        if isinstance(body, web.Response):
            return body
        prompt = body.get("prompt")
        if isinstance(prompt, list):
            prompt = " ".join(str(p) for p in prompt)
        if not isinstance(prompt, str) or not prompt:
            return error(400, "[{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}]")
        bad = check_model(body)
        if bad:
            return bad
        prompt_tokens = count_tokens(prompt) + 1
        max_tokens = body.get("max_tokens", 16)
        bad = check_length(prompt_tokens, max_tokens)
        if bad:
            return bad
        gen = engine.answer(prompt, prompt_tokens, max_tokens)
        return await respond(request, body, gen, prompt[:200], chat=False)

    async def invocations(request: web.Request) -> web.StreamResponse:
        body = await body_of(request)
        if isinstance(body, web.Response):
            return body
        if "messages" in body:
            return await chat(request)
        if "prompt" in body or "inputs" in body:
            if "inputs" in body and "prompt" not in body:
                gen = engine.answer(str(body["inputs"]), count_tokens(str(body["inputs"])) + 1, None)
                return web.json_response({"generated_text": gen.text})
            return await completions(request)
        return error(400, "Cannot find a suitable handler for request: the body has neither messages nor prompt")

    async def generate(request: web.Request) -> web.StreamResponse:
        body = await body_of(request)
        if isinstance(body, web.Response):
            return body
        text = body.get("text")
        if not isinstance(text, str):
            return error(400, "Either text or input_ids should be provided.")
        params = body.get("sampling_params") or {}
        prompt_tokens = count_tokens(text) + 1
        gen = engine.answer(text, prompt_tokens, params.get("max_new_tokens", 128))
        out = "".join([t async for t in engine.run(gen, text[:200])])
        return web.json_response(
            {
                "text": out,
                "meta_info": {
                    "id": uuid.uuid4().hex,
                    "finish_reason": {"type": gen.finish_reason},
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": len(gen.tokens),
                    "cached_tokens": 0,
                },
            }
        )

    async def model_info(request: web.Request) -> web.Response:
        return web.json_response({"model_path": spec.model, "tokenizer_path": spec.model, "is_generation": True})

    async def respond(request: web.Request, body: dict, gen: Generation, prefix: str, chat: bool) -> web.StreamResponse:
        rid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        created = int(time.time())
        model = body.get("model") or spec.name
        usage = {
            "prompt_tokens": gen.prompt_tokens,
            "total_tokens": gen.prompt_tokens + len(gen.tokens),
            "completion_tokens": len(gen.tokens),
            "prompt_tokens_details": None,
        }
        if not body.get("stream"):
            text = "".join([t async for t in engine.run(gen, prefix)])
            if chat:
                choice: dict = {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "refusal": None,
                        "tool_calls": [],
                        "reasoning_content": None,
                    },
                    "logprobs": None,
                    "finish_reason": gen.finish_reason,
                    "stop_reason": None,
                }
            else:
                choice = {
                    "index": 0,
                    "text": text,
                    "logprobs": None,
                    "finish_reason": gen.finish_reason,
                    "stop_reason": None,
                    "prompt_logprobs": None,
                }
            return web.json_response(
                {
                    "id": rid,
                    "object": "chat.completion" if chat else "text_completion",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    "usage": usage,
                    "prompt_logprobs": None,
                    "kv_transfer_params": None,
                }
            )
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        obj = "chat.completion.chunk" if chat else "text_completion"

        async def send(payload: dict) -> None:
            await resp.write(f"data: {json.dumps(payload)}\n\n".encode())

        def chunk(delta: dict | str, finish: str | None) -> dict:
            if chat:
                c: dict = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                c = {"index": 0, "text": delta, "logprobs": None, "finish_reason": finish, "stop_reason": None}
            return {"id": rid, "object": obj, "created": created, "model": model, "choices": [c]}

        if chat:
            await send(chunk({"role": "assistant", "content": ""}, None))
        async for tok in engine.run(gen, prefix):
            await send(chunk({"content": tok} if chat else tok, None))
        await send(chunk({} if chat else "", gen.finish_reason))
        if (body.get("stream_options") or {}).get("include_usage"):
            await send({"id": rid, "object": obj, "created": created, "model": model, "choices": [], "usage": usage})
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def not_found(request: web.Request) -> web.Response:
        return web.json_response({"detail": "Not Found"}, status=404)

    app.router.add_get("/health", health)
    app.router.add_get("/ping", health)
    app.router.add_post("/ping", health)
    app.router.add_get("/version", version)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/metrics", metrics)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/invocations", invocations)
    if spec.engine == "sglang":
        app.router.add_post("/generate", generate)
        app.router.add_get("/get_model_info", model_info)
        app.router.add_get("/health_generate", health)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
