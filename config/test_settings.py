"""Settings for the test suite: the real settings module, pointed at a throwaway data directory.

The environment is still the only input (``config/settings.py`` reads it); this module only
chooses test defaults before that module runs.
"""

import os
import tempfile

os.environ.setdefault("CONFAB_ENV", "test")
os.environ.setdefault("CONFAB_DATA_DIR", tempfile.mkdtemp(prefix="confab-test-"))

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed, tests only

if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    # A file, not Django's shared-cache memory database: concurrent threads then wait for the
    # write lock (as in production) instead of failing with "table is locked".
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(  # noqa: F405
        os.environ["CONFAB_DATA_DIR"], "test.sqlite3")}
