from django.urls import path, re_path

from nests import views

urlpatterns = [
    path("", views.home, name="home"),
    path("nests", views.nests_index, name="nests"),
    path("nests/<str:nest_id>", views.nest, name="nest"),
    path("crows/<str:name>", views.crow, name="crow"),
    path("trust", views.trust, name="trust"),
    path("lists", views.archive, name="archive"),
    path("lists/<str:list_id>", views.list_report, name="list"),
    path("lists/<str:list_id>/report.md", views.list_report_markdown, name="list-markdown"),
    path("review", views.review, name="review"),
    path("settings", views.settings_page, name="settings"),
    path("glossary", views.glossary, name="glossary"),
    re_path(r"^static/(?P<path>.+)$", views.static_file, name="static-file"),
]
