from django.apps import AppConfig


class RealtimeConfig(AppConfig):
    name = "apps.realtime"
    label = "realtime"

    def ready(self) -> None:
        from apps.realtime import eager_send, lazy_log_args

        eager_send.install()  # Daphne's sockets send frames as they are written (issue 20)
        lazy_log_args.install()  # ... without building autobahn's debug lines for each
