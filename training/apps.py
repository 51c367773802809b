from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"
    verbose_name = "Training"

    def ready(self) -> None:
        from . import kinds  # noqa: F401  (registers job.* operation kinds)
