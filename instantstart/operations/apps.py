from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "instantstart.operations"
    label = "operations"
    verbose_name = "Operations and audit"

    def ready(self) -> None:
        # Operation kinds register themselves when their steps module is imported.
        from . import kinds_builtin  # noqa: F401
