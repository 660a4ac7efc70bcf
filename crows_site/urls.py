from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from crows_site import views
from crows_site.api import api


# The API trusts no Django session (its checks are in crows_site/security.py), so a POST to a path that does not exist
# gets the same JSON 404 as a GET, not Django's CSRF page.
@csrf_exempt
def api_not_found(request: HttpRequest, rest: str) -> JsonResponse:
    return JsonResponse({"message": f"no such endpoint: {request.method} /api/{rest}"}, status=404)


urlpatterns = [
    path("admin/", admin.site.urls),
    path("login", views.login, name="login"),
    path("logout", views.logout, name="logout"),
    path("api/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("", include("nests.urls")),
]
