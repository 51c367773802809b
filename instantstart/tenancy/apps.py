from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "instantstart.tenancy"
    label = "tenancy"
    verbose_name = "Teams and access"

    def ready(self) -> None:
        from instantstart.api import schema  # noqa: F401  (registers the OpenAPI auth schemes)
