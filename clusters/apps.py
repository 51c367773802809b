from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "clusters"
    verbose_name = "Clusters"

    def ready(self) -> None:
        from . import kinds  # noqa: F401  (registers cluster.* operation kinds)
