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
