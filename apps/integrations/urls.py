"""The team settings pages (namespace ``integrations``), mounted at the site root."""

from __future__ import annotations

from django.urls import path

from apps.integrations import views

app_name = "integrations"

urlpatterns = [
    path("teams/<int:team_id>/settings/", views.team_settings, name="team_settings"),
    path("teams/<int:team_id>/settings/model/", views.team_model, name="team_model"),
    path("teams/<int:team_id>/settings/tools/", views.team_tools, name="team_tools"),
]
