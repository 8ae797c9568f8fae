"""Each passage keeps its document's inbound links; SQLite ranks through a covering index."""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def add_links(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    from tmsite.search.engines import ENGINES

    connection = schema_editor.connection
    with connection.cursor() as cursor:
        columns = connection.introspection.get_table_description(cursor, "search_passage")
        if "links" not in {column.name for column in columns}:
            cursor.execute(
                "ALTER TABLE search_passage ADD COLUMN links INTEGER NOT NULL DEFAULT 0"
            )
        ENGINES[connection.vendor].create(cursor)


def drop_links(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS search_passage_scope")
        cursor.execute("ALTER TABLE search_passage DROP COLUMN links")


class Migration(migrations.Migration):
    dependencies = [("tm_search", "0001_create_document_index")]
    operations = [migrations.RunPython(add_links, drop_links)]
