from django.apps import AppConfig


class InferenceConfig(AppConfig):
    name = "inference"
    verbose_name = "Inference"

    def ready(self) -> None:
        from . import kinds  # noqa: F401  (registers endpoint.* and model.* operation kinds)
