# Joins the two branches that each added a 0003 (owner decisions from issue 9, the
# trust-entry reset from issue 12); no operations of its own.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("trust", "0003_decisions_quarantine"),
        ("trust", "0003_trust_entry_reset"),
    ]

    operations: list = []
