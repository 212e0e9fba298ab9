"""REST: the read API and transcript export, with an OpenAPI schema."""
