"""WebSocket routes of the training app (mounted by instantstart.asgi)."""

from django.urls import path

from .consumers import JobLogConsumer

websocket_urlpatterns = [
    path("ws/jobs/<str:job>/logs/", JobLogConsumer.as_asgi()),
]
