"""The stdio launch fields leave the record: what runs is the operator's (``0003`` kept them)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("tm_servers", "0003_program"),
    ]

    operations = [
        migrations.RemoveField(model_name="mcpserver", name="command"),
        migrations.RemoveField(model_name="mcpserver", name="args"),
        migrations.RemoveField(model_name="mcpserver", name="cwd"),
        migrations.RemoveField(model_name="mcpserver", name="env_allow"),
    ]
