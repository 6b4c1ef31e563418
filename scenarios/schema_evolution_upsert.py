import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from harness.model import PLAIN_LAYOUT, TableLayout
from scenarios.base import EVOLVED_FIELD, DataSets, add_evolved_column
from scenarios.upsert import Upsert


class SchemaEvolutionUpsert(Upsert):
    name = "schema-evolution-upsert"
    description = "base set, add a column, then upsert change rows that carry it"
    source_set = "changes-evolved"

    def prepare(
        self, catalog: Catalog, namespace: str, sets: DataSets, layout: TableLayout = PLAIN_LAYOUT
    ) -> Table:
        table = super().prepare(catalog, namespace, sets, layout)
        add_evolved_column(table)
        return table

    def expected_schema(self, sets: DataSets) -> pa.Schema:
        return self.table_schema(sets).append(EVOLVED_FIELD)
