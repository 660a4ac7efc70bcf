from django.urls import path

from nests import views

urlpatterns = [
    path("", views.home, name="home"),
]
