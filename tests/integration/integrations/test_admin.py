"""The providers admin: the key is write-only, and "test connection" / "fetch models" talk to
real loopback servers (fakellm, a server that refuses the key, a closed port)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.urls import reverse

from apps.accounts.models import User
from apps.integrations.models import ModelConfig, ProviderConfig
from tests.integration.fakellm_server import fakellm_process, free_port
from tests.integration.integrations.conftest import API_KEY
from tests.integration.personas import PASSWORD

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:integrations_providerconfig_changelist"


@pytest.fixture(scope="module")
def fakellm() -> Iterator[str]:
    """The origin of a fakellm server process (serves GET /v1/models and /v1beta/models)."""
    with fakellm_process() as origin:
        yield origin


@pytest.fixture(scope="module")
def refusing_server() -> Iterator[str]:
    """An OpenAI-compatible origin that answers 401 and quotes the key it was sent, as some
    providers do."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}",
                                         "type": "invalid_request_error",
                                         "code": "invalid_api_key"}}).encode()
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def make_provider(name: str, kind: str, base_url: str, key: str = API_KEY) -> ProviderConfig:
    return ProviderConfig.objects.create(name=name, kind=kind, base_url=base_url, api_key=key)


def run_action(client: Client, action: str, *configs: ProviderConfig) -> list[tuple[str, str]]:
    """Run an admin action; the (level, text) of the messages it left."""
    response = client.post(reverse(CHANGELIST), {
        "action": action, "_selected_action": [c.pk for c in configs]}, follow=True)
    assert response.status_code == 200
    assert API_KEY not in response.content.decode()
    return [(m.level_tag, m.message) for m in get_messages(response.wsgi_request)]


def form_data(config: ProviderConfig, **changes: str) -> dict[str, str]:
    return {"name": config.name, "kind": config.kind, "profile": config.profile,
            "base_url": config.base_url, "enabled": "on", "new_api_key": "", **changes}


# -- the key is write-only -------------------------------------------------------------------
def test_no_admin_page_shows_the_key(admin_client: Client, provider: ProviderConfig) -> None:
    pages = [
        admin_client.get(reverse("admin:integrations_providerconfig_change",
                                 args=[provider.pk])),
        admin_client.get(reverse(CHANGELIST)),
        admin_client.get(reverse("admin:integrations_providerconfig_history",
                                 args=[provider.pk])),
        admin_client.get(reverse("admin:integrations_providerconfig_delete",
                                 args=[provider.pk])),
    ]
    for page in pages:
        assert page.status_code == 200
        assert API_KEY not in page.content.decode()
    form = pages[0].content.decode()
    assert 'type="password" name="new_api_key"' in form
    assert 'name="api_key"' not in form


def test_saving_with_the_key_field_empty_keeps_the_stored_key(
    admin_client: Client, provider: ProviderConfig
) -> None:
    url = reverse("admin:integrations_providerconfig_change", args=[provider.pk])
    response = admin_client.post(url, form_data(provider, base_url="https://llm2.example.com/v1"))
    assert response.status_code == 302
    provider.refresh_from_db()
    assert (provider.base_url, provider.api_key) == ("https://llm2.example.com/v1", API_KEY)


def test_a_new_key_replaces_the_stored_one_and_the_box_removes_it(
    admin_client: Client, provider: ProviderConfig
) -> None:
    url = reverse("admin:integrations_providerconfig_change", args=[provider.pk])
    assert admin_client.post(url, form_data(provider, new_api_key="sk-new")).status_code == 302
    provider.refresh_from_db()
    assert provider.api_key == "sk-new"
    assert admin_client.post(url, form_data(provider, clear_api_key="on")).status_code == 302
    provider.refresh_from_db()
    assert provider.api_key == ""


def test_a_key_no_configured_key_opens_can_be_replaced_in_the_admin(
    admin_client: Client, provider: ProviderConfig
) -> None:
    """What a run's setup error asks for: the change page opens and takes a new key."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {ProviderConfig._meta.db_table} SET api_key = %s",
                       ["gAAAAABnot-a-token-any-key-opens"])
    url = reverse("admin:integrations_providerconfig_change", args=[provider.pk])
    for page in (admin_client.get(url), admin_client.get(reverse(CHANGELIST))):
        assert page.status_code == 200
        assert 'alt="True"' in page.content.decode()  # a key is stored (Key stored: yes)
    for action in ("test_connection", "fetch_models"):
        assert run_action(admin_client, action, provider) == [
            ("error", f"{provider.name}: Its stored API key cannot be decrypted with "
                      "CONFAB_FERNET_KEYS (was a key removed before rotate_secrets ran?): "
                      "enter the key again.")]
    assert admin_client.post(url, form_data(provider, new_api_key="sk-new")).status_code == 302
    provider.refresh_from_db()
    assert provider.api_key == "sk-new"


def test_a_provider_added_in_the_admin_has_its_key_encrypted(admin_client: Client) -> None:
    response = admin_client.post(reverse("admin:integrations_providerconfig_add"), {
        "name": "DeepSeek", "kind": "openai", "profile": "deepseek",
        "base_url": "https://api.deepseek.com/v1", "enabled": "on", "new_api_key": "sk-ds"})
    assert response.status_code == 302
    assert ProviderConfig.objects.get(name="DeepSeek").api_key == "sk-ds"


def test_an_unknown_profile_is_refused_by_the_form(
    admin_client: Client, provider: ProviderConfig
) -> None:
    url = reverse("admin:integrations_providerconfig_change", args=[provider.pk])
    response = admin_client.post(url, form_data(provider, profile="nonsense"))
    assert response.status_code == 200
    assert "Unknown profile" in response.content.decode()


# -- test connection ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["anthropic", "openai", "gemini"])
def test_test_connection_succeeds_against_fakellm(
    admin_client: Client, fakellm: str, kind: str
) -> None:
    config = make_provider("fake", kind, fakellm + "/v1" if kind == "openai" else fakellm)
    assert run_action(admin_client, "test_connection", config) == [
        ("success", "fake: connected; the provider lists 1 model.")]


def test_a_closed_port_is_reported_as_a_network_error(admin_client: Client) -> None:
    config = make_provider("down", "openai", f"http://127.0.0.1:{free_port()}/v1")
    [(level, text)] = run_action(admin_client, "test_connection", config)
    assert level == "error"
    assert text.startswith("down: failed (network): ")


def test_a_missing_endpoint_is_reported_as_not_found(admin_client: Client, fakellm: str) -> None:
    config = make_provider("wrong path", "openai", fakellm + "/nope")
    [(level, text)] = run_action(admin_client, "test_connection", config)
    assert (level, text.split(":")[1].strip()) == ("error", "failed (not_found)")


def test_a_refused_key_is_reported_without_the_key(
    admin_client: Client, refusing_server: str
) -> None:
    config = make_provider("refusing", "openai", refusing_server + "/v1")
    [(level, text)] = run_action(admin_client, "test_connection", config)
    assert level == "error"
    assert text.startswith("refusing: failed (auth): ")
    assert "Incorrect API key provided: [redacted]" in text
    assert API_KEY not in text


# -- fetch models --------------------------------------------------------------------------------
def test_fetch_models_creates_the_listed_models_once(admin_client: Client, fakellm: str) -> None:
    config = make_provider("fake", "gemini", fakellm)
    assert run_action(admin_client, "fetch_models", config) == [
        ("success", "fake: 1 model(s) created, 0 updated.")]
    model = ModelConfig.objects.get(provider=config)
    assert (model.model_id, model.display_name, model.context_window,
            model.max_output_tokens, model.enabled) == (
        "confab-offline", "confab offline scripted model", 200_000, 8_192, True)
    assert run_action(admin_client, "fetch_models", config) == [
        ("success", "fake: 0 model(s) created, 0 updated.")]


def test_fetch_models_updates_limits_but_keeps_staff_choices(
    admin_client: Client, fakellm: str
) -> None:
    config = make_provider("fake", "gemini", fakellm)
    ModelConfig.objects.create(provider=config, model_id="confab-offline", display_name="Ours",
                               context_window=1_000, max_output_tokens=8_192, enabled=False,
                               default_reasoning={"effort": "low"})
    assert run_action(admin_client, "fetch_models", config) == [
        ("success", "fake: 0 model(s) created, 1 updated.")]
    model = ModelConfig.objects.get(provider=config)
    assert (model.display_name, model.context_window, model.enabled,
            model.default_reasoning) == ("Ours", 200_000, False, {"effort": "low"})


def test_fetch_models_falls_back_to_the_built_in_list_when_the_provider_is_down(
    admin_client: Client,
) -> None:
    config = make_provider("down", "anthropic", f"http://127.0.0.1:{free_port()}")
    [(level, text)] = run_action(admin_client, "fetch_models", config)
    created = ModelConfig.objects.filter(provider=config).count()
    assert level == "warning" and created > 0
    assert text.startswith("down: failed (network): ")
    assert text.endswith(f"; used the built-in list of {created} model(s): {created} "
                         "model(s) created, 0 updated.")


def test_fetch_models_says_so_when_there_is_nothing_to_fall_back_on(
    admin_client: Client,
) -> None:
    config = make_provider("down", "openai", f"http://127.0.0.1:{free_port()}/v1")  # generic
    [(level, text)] = run_action(admin_client, "fetch_models", config)
    assert level == "error" and text.startswith("down: failed (network): ")
    assert text.endswith("; no built-in list to fall back on.")
    assert not ModelConfig.objects.filter(provider=config).exists()


def test_a_signed_in_non_staff_user_cannot_run_provider_actions(
    client: Client, charlie: User, provider: ProviderConfig
) -> None:
    assert client.login(username="charlie", password=PASSWORD)
    response = client.post(reverse(CHANGELIST), {
        "action": "fetch_models", "_selected_action": [provider.pk]})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert not ModelConfig.objects.filter(provider=provider).exists()
