# Joins the expectation ledger, debates and orchestration log with item retries; no
# operations of its own.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("nests", "0005_expectations_debates_orchestration"),
        ("nests", "0005_item_retry_attempts"),
    ]

    operations: list = []
