from django.apps import AppConfig


class FeaturesConfig(AppConfig):
    name = "features"
    verbose_name = "Managed features"

    def ready(self) -> None:
        from . import kinds  # noqa: F401 - registers the features.update operation kind
