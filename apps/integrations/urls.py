"""The team settings pages (namespace ``integrations``), mounted at the site root."""

from __future__ import annotations

from django.urls import path

from apps.integrations import views

app_name = "integrations"

urlpatterns = [
    path("teams/<int:team_id>/settings/", views.team_settings, name="team_settings"),
    path("teams/<int:team_id>/settings/model/", views.team_model, name="team_model"),
    path("teams/<int:team_id>/settings/tools/", views.team_tools, name="team_tools"),
    path("teams/<int:team_id>/settings/agent-handle/", views.team_agent_handle,
         name="team_agent_handle"),
    path("teams/<int:team_id>/settings/mcp/", views.mcp_server_add, name="mcp_server_add"),
    path("teams/<int:team_id>/settings/mcp/<int:server_id>/", views.mcp_server_edit,
         name="mcp_server_edit"),
    path("teams/<int:team_id>/settings/mcp/<int:server_id>/delete/", views.mcp_server_remove,
         name="mcp_server_delete"),
    path("teams/<int:team_id>/settings/mcp/<int:server_id>/test/", views.mcp_server_check,
         name="mcp_server_test"),
    path("teams/<int:team_id>/mcp/sign-ins/", views.mcp_sign_ins, name="mcp_sign_ins"),
    path("teams/<int:team_id>/mcp/<int:server_id>/sign-in/", views.mcp_sign_in,
         name="mcp_sign_in"),
    path("teams/<int:team_id>/mcp/<int:server_id>/sign-out/", views.mcp_sign_out,
         name="mcp_sign_out"),
    path("mcp/oauth/callback/", views.mcp_oauth_callback, name="mcp_oauth_callback"),
    path("teams/<int:team_id>/settings/mcp/catalog/<int:server_id>/enable/",
         views.mcp_catalog_on, name="mcp_catalog_enable"),
    path("teams/<int:team_id>/settings/mcp/catalog/<int:server_id>/disable/",
         views.mcp_catalog_off, name="mcp_catalog_disable"),
]
