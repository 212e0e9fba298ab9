from django.apps import AppConfig


class RealtimeConfig(AppConfig):
    name = "apps.realtime"
    label = "realtime"

    def ready(self) -> None:
        from apps.realtime.eager_send import install

        install()  # Daphne's sockets send frames as they are written (issue 20)
