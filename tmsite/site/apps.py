from django.apps import AppConfig


class SiteConfig(AppConfig):
    name = "tmsite.site"
    label = "tm_site"
    default_auto_field = "django.db.models.BigAutoField"
