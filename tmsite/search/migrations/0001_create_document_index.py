"""The index's tables: FTS5 on SQLite, a tsvector under GIN on PostgreSQL."""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def create_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    from tmsite.search.engines import ENGINES

    connection = schema_editor.connection
    with connection.cursor() as cursor:
        ENGINES[connection.vendor].create(cursor)


def drop_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    with schema_editor.connection.cursor() as cursor:
        for table in ("search_fts", "search_passage", "search_document", "search_state"):
            cursor.execute(f"DROP TABLE IF EXISTS {table}")


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(create_index, drop_index)]
