from django.apps import AppConfig


class ServersConfig(AppConfig):
    name = "tmsite.servers"
    label = "tm_servers"
    verbose_name = "MCP servers"
    default_auto_field = "django.db.models.BigAutoField"
