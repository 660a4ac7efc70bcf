# Joins the Jev tag's source (the optional LLM second opinion) with the retention and
# worker branch; no operations of its own.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("flock", "0003_jev_tag_source"),
        ("flock", "0004_merge_prune_marks_task_lease"),
    ]

    operations: list = []
