"""Static files under ASGI without Django's "StreamingHttpResponse must consume synchronous
iterators" warning on every request.

WhiteNoise answers with a FileResponse whose chunks come from a synchronous file iterator; Django's
ASGI handler then warns and consumes it in a thread. This middleware (placed before WhiteNoise) hands
the same chunks over as an asynchronous iterator, each read still in a thread, so nothing blocks the
event loop and nothing warns. Under WSGI (tests, management commands) it leaves responses alone.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse

_END = object()


def _chunks(iterator):
    async def chunks():
        read = sync_to_async(next, thread_sensitive=False)
        while (chunk := await read(iterator, _END)) is not _END:
            yield chunk

    return chunks()


class AsyncFileResponseMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if isinstance(request, ASGIRequest) and isinstance(response, FileResponse) and not response.is_async:
            response.streaming_content = _chunks(iter(response.streaming_content))
        return response
