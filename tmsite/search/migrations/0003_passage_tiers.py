"""PostgreSQL keeps each passage's lexemes of a title or heading, and those its body repeats.

A query of one word ranks only the passages that may be among its best with them (see
``engines._tiered``); SQLite has nothing to add.
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

COLUMNS = ("titled", "repeated")


def add_tiers(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    from tmsite.search.engines import ENGINES, REPEATED, TITLED

    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for column in COLUMNS:
            cursor.execute(f"ALTER TABLE search_passage ADD COLUMN IF NOT EXISTS {column} TSVECTOR")
        cursor.execute(
            f"UPDATE search_passage SET titled = {TITLED.format('vec')}, "
            f"repeated = {REPEATED.format('vec')} WHERE titled IS NULL OR repeated IS NULL"
        )
        for column in COLUMNS:
            cursor.execute(f"ALTER TABLE search_passage ALTER COLUMN {column} SET NOT NULL")
        ENGINES[connection.vendor].create(cursor)


def drop_tiers(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for column in COLUMNS:
            cursor.execute(f"DROP INDEX IF EXISTS search_passage_{column}")
            cursor.execute(f"ALTER TABLE search_passage DROP COLUMN IF EXISTS {column}")


class Migration(migrations.Migration):
    dependencies = [("tm_search", "0002_passage_links")]
    operations = [migrations.RunPython(add_tiers, drop_tiers)]
