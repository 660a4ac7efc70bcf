from django.db import migrations, models


def count_flights(apps, schema_editor):
    """Start the counts from the rows: the flights in the air now, and whether any waits."""
    FlightGate = apps.get_model("nests", "FlightGate")
    Sortie = apps.get_model("nests", "Sortie")
    FlightGate.objects.filter(pk=1).update(
        in_air=Sortie.objects.filter(status="flying").count(),
        waiting=Sortie.objects.filter(status="waiting").exists(),
    )


class Migration(migrations.Migration):

    dependencies = [
        ('nests', '0010_crew_rounds'),
    ]

    operations = [
        migrations.AddField(
            model_name='flightgate',
            name='in_air',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='flightgate',
            name='waiting',
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(count_flights, migrations.RunPython.noop),
    ]
