"""The team wiki around :mod:`apps.engine.wiki`: whose repository, who writes, REST, git clone,
pages in the browser and their live events (DESIGN 3.7)."""
