from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.CreateModel(
            name="KindCount",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(max_length=64, unique=True)),
                ("count", models.BigIntegerField(default=0)),
                ("media_types", models.JSONField(default=dict)),
                ("rels", models.JSONField(default=dict)),
                ("first_served", models.DateTimeField()),
                ("last_served", models.DateTimeField()),
            ],
            options={"ordering": ("kind",)},
        ),
    ]
