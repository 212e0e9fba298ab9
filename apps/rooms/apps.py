from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RoomsConfig(AppConfig):
    name = "apps.rooms"
    label = "rooms"
    verbose_name = _("Rooms")

    def ready(self) -> None:
        from apps.rooms import signals  # noqa: F401  (connects the receivers)
