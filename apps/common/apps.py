import contextlib

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured

from apps.common.event_loops import install_reactor

# Daphne's app module, imported after this one (INSTALLED_APPS lists this app first), installs
# Twisted's reactor over asyncio's loop unless one is installed: this one is over the loop
# CONFAB_EVENT_LOOP names (manage.py serve runs Daphne and the embedded worker on it). A name
# that cannot be had leaves Daphne's: manage.py serve refuses it, migrate and the like run no
# loop and go on.
with contextlib.suppress(ImproperlyConfigured):
    install_reactor()


class CommonConfig(AppConfig):
    name = "apps.common"
    label = "common"
