def mount_mcp(django_app):
    return django_app
