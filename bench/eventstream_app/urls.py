from django.urls import path

from eventstream_app import views

urlpatterns = [
    path("api/events", views.stream),
    path("api/nests/<str:nest_id>/messages", views.post_message),
    path("api/state", views.state),
]
