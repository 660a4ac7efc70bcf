# Joins two branches that each added a 0003 (retention's prune marks, the workers' task
# leases); no operations of its own.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("flock", "0003_stream_prune_marks"),
        ("flock", "0003_task_lease"),
    ]

    operations: list = []
