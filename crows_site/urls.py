from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path

from crows_site.api import api


def api_not_found(request: HttpRequest, rest: str) -> JsonResponse:
    return JsonResponse({"message": f"no such endpoint: {request.method} /api/{rest}"}, status=404)


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("", include("nests.urls")),
]
