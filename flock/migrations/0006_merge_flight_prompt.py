# Joins the flight log's prompts (the owner's desk) with the other flock branches; no
# operations of its own.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("flock", "0004_flight_prompt"),
        ("flock", "0005_merge_jev_tag_source"),
    ]

    operations: list = []
