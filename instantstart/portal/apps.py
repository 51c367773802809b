from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "instantstart.portal"
    label = "portal"
    verbose_name = "Portal"
