from django.apps import AppConfig

from apps.common.event_loops import install_reactor

# Daphne's app module, imported after this one (INSTALLED_APPS lists this app first), installs
# Twisted's reactor over asyncio's loop unless one is installed: this one is over the loop
# CONFAB_EVENT_LOOP names (manage.py serve runs Daphne and the embedded worker on it).
install_reactor()


class CommonConfig(AppConfig):
    name = "apps.common"
    label = "common"
