from django.db import migrations, models


def number_entries(apps, schema_editor):
    """Number every holder's entries per task type in the order they were appended."""
    TrustEntry = apps.get_model("trust", "TrustEntry")
    last: dict[tuple[str, str], int] = {}
    changed = []
    for entry in TrustEntry.objects.order_by("id").only("id", "holder", "task_type", "seq"):
        key = (entry.holder, entry.task_type)
        last[key] = last.get(key, 0) + 1
        entry.seq = last[key]
        changed.append(entry)
    TrustEntry.objects.bulk_update(changed, ["seq"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ('trust', '0006_plural_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='trustentry',
            name='seq',
            field=models.PositiveIntegerField(default=0, help_text="This entry's number among its holder's for the task type."),
        ),
        migrations.RunPython(number_entries, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='trustentry',
            constraint=models.UniqueConstraint(fields=('holder', 'task_type', 'seq'), name='trust_entry_seq_once'),
        ),
    ]
