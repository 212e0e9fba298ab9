from django.apps import AppConfig


class RoomsConfig(AppConfig):
    name = "apps.rooms"
    label = "rooms"

    def ready(self) -> None:
        from apps.rooms import signals  # noqa: F401  (connects the receivers)
