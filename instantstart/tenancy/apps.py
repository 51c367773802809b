from django.apps import AppConfig


class TenancyConfig(AppConfig):
    name = "instantstart.tenancy"
    label = "tenancy"
    verbose_name = "Teams and access"
