from django.apps import AppConfig


class WikiConfig(AppConfig):
    name = "apps.wiki"
    label = "wiki"
