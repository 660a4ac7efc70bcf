from django.contrib import admin

from nests.models import Nest, NestMessage


@admin.register(Nest)
class NestAdmin(admin.ModelAdmin):
    list_display = ("nest_id", "name", "kind", "created_at")


@admin.register(NestMessage)
class NestMessageAdmin(admin.ModelAdmin):
    list_display = ("msg_id", "kind", "author", "to", "tagged_by", "created_at")
