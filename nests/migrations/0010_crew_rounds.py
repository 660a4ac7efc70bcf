# The crew rotation goes in rounds (docs/LISTS.md "Crew"): who has had a turn in the
# current round on each side, instead of where a fixed order stands. A rotation's old
# position is dropped: each nest starts a fresh round.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('nests', '0009_expectation_conduct_checks'),
    ]

    operations = [
        migrations.RemoveField(
            model_name='crowrotation',
            name='core_next',
        ),
        migrations.RemoveField(
            model_name='crowrotation',
            name='outside_next',
        ),
        migrations.AddField(
            model_name='crowrotation',
            name='core_taken',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='crowrotation',
            name='outside_taken',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='crowrotation',
            name='turns',
            field=models.PositiveIntegerField(default=0),
        ),
    ]
