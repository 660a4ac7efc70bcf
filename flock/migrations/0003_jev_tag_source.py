# Jev's tag log records who gave each answer: the local model or the LLM second opinion (issue 15).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('flock', '0002_compact_event_payload'),
    ]

    operations = [
        migrations.AddField(
            model_name='jevtag',
            name='source',
            field=models.CharField(default='local', max_length=16),
        ),
        migrations.AddField(
            model_name='jevtag',
            name='local_choice',
            field=models.CharField(blank=True, default='', max_length=40),
        ),
    ]
