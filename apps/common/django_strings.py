"""Django's own strings that its zh_Hans catalog does not translate yet, marked here so that
``make messages`` keeps them in ours (``LOCALE_PATHS`` is read before Django's catalogs).

Django 6.1 added ``BLANK_CHOICE_LABEL`` ("- Select an option -", the empty choice of a select:
the admin's action list, a model form's optional choice), and its zh_Hans catalog has no entry
for it yet. ``tests/integration/i18n/test_pages_zh_hans.py`` fails once Django translates one of
them, so that it can leave this list.
"""

from django.utils.translation import gettext_noop

__all__ = ["DJANGO_STRINGS"]

DJANGO_STRINGS = (gettext_noop("- Select an option -"),)
