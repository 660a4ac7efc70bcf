import json
from datetime import UTC, datetime

from django.http import HttpResponseBadRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django_eventstream import send_event
from django_eventstream.views import events


def stream(request):
    channel = request.GET.get("nest_id", "todo")
    since = request.GET.get("since")
    if since is not None and not request.META.get("HTTP_LAST_EVENT_ID"):
        request.META["HTTP_LAST_EVENT_ID"] = f"{channel}:{int(since)}"
    return events(request, channels=[channel])


@csrf_exempt
def post_message(request, nest_id):
    if request.method != "POST":
        return HttpResponseBadRequest("POST only")
    try:
        body = json.loads(request.body)
        author, text = str(body["author"]), str(body["text"])
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"message": "bad body"}, status=400)
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    send_event(nest_id, "message", {"nest_id": nest_id, "author": author, "text": text, "ts": now})
    return JsonResponse({"ok": True}, status=201)


def state(request):
    return JsonResponse({"protocol": "django-eventstream"})
