"""The room pages (namespace ``rooms``)."""

from __future__ import annotations

from django.urls import path

from apps.rooms import search_views, views

app_name = "rooms"

urlpatterns = [
    path("rooms/", views.room_list, name="room_list"),
    path("rooms/new/", views.room_new, name="room_new"),
    path("rooms/<int:room_id>/", views.room_detail, name="room_detail"),
    path("rooms/<int:room_id>/conversations/new/", views.conversation_new,
         name="conversation_new"),
    path("conversations/<int:conversation_id>/", views.conversation, name="conversation"),
    path("search/", search_views.search_page, name="search"),
]
