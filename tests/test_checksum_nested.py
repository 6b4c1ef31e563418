"""The content checksum of nested values (generators/checksum.py): struct, list and map cells,
nested in each other, as the documented definition says; Arrow's layout variants alike; and
every change inside a nested value (a struct field, a list element, a map value, where a
null sits, how elements split into lists) changes the row."""

import copy
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from test_checksum import LANES, MASK, int64_le, length_prefixed, siphash

from generators.checksum import _ROW_KEY, Checksum, Tag, _signature, cell_header, nested_header, row_hashes


def word(value: int) -> bytes:
    return (value & MASK).to_bytes(8, "little")


def reference_node(kind: pa.DataType, values: list[Any]) -> bytes:
    """One node of a nested type over its elements, then its children: the documented order."""
    if pa.types.is_struct(kind):
        out = b"".join(word(value is not None) for value in values)
        for field in sorted(kind, key=lambda field: field.name):
            out += reference_node(
                field.type, [None if value is None else value[field.name] for value in values]
            )
        return out
    if pa.types.is_map(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind):
        out = b"".join(word(0 if value is None else len(value) << 1 | 1) for value in values)
        elements = [element for value in values if value is not None for element in value]
        if pa.types.is_map(kind):
            return (
                out
                + reference_node(kind.key_type, [key for key, _ in elements])
                + reference_node(kind.item_type, [item for _, item in elements])
            )
        return out + reference_node(kind.value_type, elements)
    return b"".join(reference_leaf(kind, value) for value in values)


def reference_leaf(kind: pa.DataType, value: Any) -> bytes:
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return word(0) if value is None else word(1) + length_prefixed(value.encode())
    if pa.types.is_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return word(0) if value is None else word(1) + length_prefixed(value)
    if pa.types.is_decimal(kind):
        unscaled = 0 if value is None else int(value.scaleb(kind.scale))
        return word(value is not None) + (unscaled & (1 << 128) - 1).to_bytes(16, "little")
    if pa.types.is_floating(kind):
        return word(value is not None) + (bytes(8) if value is None else np.float64(value).tobytes())
    return word(value is not None) + (bytes(8) if value is None else int64_le(int(value)))


def reference_lanes(columns: dict[str, tuple[pa.DataType, Any]]) -> list[int]:
    """A row of nested (and flat integer) cells by the definition: header, root word, nodes."""
    message = b""
    for name, (kind, value) in sorted(columns.items()):
        if value is None:
            continue
        if pa.types.is_integer(kind):
            message += int(cell_header(name, Tag.INTEGER)).to_bytes(8, "little") + int64_le(value)
            continue
        message += int(nested_header(name, _signature(kind))).to_bytes(8, "little")
        message += reference_node(kind, [value])
    return [siphash(_ROW_KEY, message + lane.to_bytes(8, "little")) for lane in range(LANES)]


ADDRESS = pa.struct([("zip", pa.string()), ("city", pa.string()), ("floor", pa.int32())])
ORDER = pa.struct(
    [
        (
            "lines",
            pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int64()), ("price", pa.decimal128(38, 9))])),
        ),
        ("tags", pa.map_(pa.string(), pa.list_(pa.float64()))),
        ("ship_to", ADDRESS),
    ]
)
ROWS: list[dict[str, Any]] = [
    {
        "id": 1,
        "order": {
            "lines": [
                {"sku": "A-1", "qty": 2, "price": Decimal("19.990000000")},
                {"sku": None, "qty": None, "price": None},
            ],
            "tags": [("gift", [1.5, None]), ("rush", [])],
            "ship_to": {"zip": "10115", "city": "Berlin", "floor": 3},
        },
        "matrix": [[1, 2], [], None, [3]],
    },
    {"id": 2, "order": None, "matrix": []},
    {
        "id": 3,
        "order": {"lines": None, "tags": [], "ship_to": None},
        "matrix": [[None]],
    },
]
MATRIX = pa.list_(pa.list_(pa.int64()))


def table_of(
    rows: list[dict[str, Any]], order: pa.DataType = ORDER, matrix: pa.DataType = MATRIX
) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([row["id"] for row in rows], pa.int64()),
            "order": pa.array([row["order"] for row in rows], order),
            "matrix": pa.array([row["matrix"] for row in rows], matrix),
        }
    )


def test_nested_cells_are_the_documented_definition():
    lanes = [
        reference_lanes(
            {"id": (pa.int64(), row["id"]), "order": (ORDER, row["order"]), "matrix": (MATRIX, row["matrix"])}
        )
        for row in ROWS
    ]
    table = table_of(ROWS)
    assert row_hashes(table).tolist() == [row_lanes[0] for row_lanes in lanes]
    assert Checksum.of(table).lanes == tuple(sum(column) & MASK for column in zip(*lanes, strict=True))


def test_arrow_layouts_of_one_nested_type_agree():
    reference = row_hashes(table_of(ROWS))
    large = pa.struct(
        [
            (
                "lines",
                pa.large_list(
                    pa.struct(
                        [("sku", pa.large_string()), ("qty", pa.int64()), ("price", pa.decimal128(38, 9))]
                    )
                ),
            ),
            ("tags", pa.map_(pa.large_string(), pa.large_list(pa.float64()))),
            (
                "ship_to",
                pa.struct([("city", pa.large_string()), ("zip", pa.string()), ("floor", pa.int32())]),
            ),
        ]
    )
    assert np.array_equal(
        row_hashes(table_of(ROWS, large, pa.large_list(pa.large_list(pa.int64())))), reference
    )
    # A list view and a fixed-size list are lists too.
    views = pa.table({"v": pa.array([[1, 2], None], pa.list_view(pa.int64()))})
    assert np.array_equal(
        row_hashes(views), row_hashes(pa.table({"v": pa.array([[1, 2], None], pa.list_(pa.int64()))}))
    )
    fixed = pa.table({"v": pa.array([[1, 2], [3, 4]], pa.list_(pa.int64(), 2))})
    assert np.array_equal(row_hashes(fixed), row_hashes(pa.table({"v": pa.array([[1, 2], [3, 4]])})))


def test_slices_and_chunks_of_nested_columns_hash_as_the_whole():
    table = table_of(ROWS * 7)
    reference = row_hashes(table)
    for start, length in ((1, 5), (4, 13), (20, 1)):
        assert np.array_equal(row_hashes(table.slice(start, length)), reference[start : start + length])
    rechunked = pa.Table.from_batches(table.to_batches(max_chunksize=4))
    assert np.array_equal(row_hashes(rechunked), reference)


def changed(path: str, value: Any) -> list[dict[str, Any]]:
    """ROWS with one nested value replaced (path of keys and indexes into row 0)."""
    rows = [ROWS[0] and copy.deepcopy(ROWS[0]), *ROWS[1:]]
    target: Any = rows[0]
    *walk, last = path.split("/")
    for step in walk:
        target = target[int(step)] if isinstance(target, list) else target[step]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return rows


@pytest.mark.parametrize(
    ("what", "path", "value"),
    [
        ("a struct field", "order/ship_to/city", "Bonn"),
        ("a struct field to null", "order/ship_to/floor", None),
        ("a struct to null", "order/ship_to", None),
        ("a list element", "matrix/0/1", 5),
        ("a list element to null", "matrix/0/0", None),
        ("an empty list to null", "matrix/1", None),
        ("elements split otherwise", "matrix", [[1], [2], None, [3]]),
        ("a map value", "order/tags/0", ("gift", [1.5, 2.5])),
        ("a map key", "order/tags/1", ("late", [])),
        ("a decimal in a list of structs", "order/lines/0/price", Decimal("19.990000001")),
        ("a null struct in a list for a struct of nulls", "order/lines/1", None),
    ],
)
def test_every_change_inside_a_nested_value_changes_the_row(what: str, path: str, value: Any):
    before = row_hashes(table_of(ROWS))
    after = row_hashes(table_of(changed(path, value)))
    assert after[0] != before[0], what
    assert np.array_equal(after[1:], before[1:])


def test_a_null_struct_hides_what_its_children_hold():
    """Arrow may keep values under a null struct: they are not the row's content."""
    children = [pa.array([1, 2]), pa.array(["x", "y"])]
    masked = pa.StructArray.from_arrays(children, names=["a", "b"], mask=pa.array([False, True]))
    empty = pa.array([{"a": 1, "b": "x"}, None], pa.struct([("a", pa.int64()), ("b", pa.string())]))
    assert np.array_equal(row_hashes(pa.table({"s": masked})), row_hashes(pa.table({"s": empty})))


def test_nested_cells_differ_from_flat_ones_and_by_type():
    as_list = one_cell([1], pa.list_(pa.int64()))
    assert as_list == one_cell([1], pa.list_(pa.int32()))  # int promoted to long: one Iceberg type
    assert as_list != one_cell([1.0], pa.list_(pa.float64()))  # the header names the element type
    assert as_list != one_cell({"item": 1}, pa.struct([("item", pa.int64())]))
    assert one_cell({"a": 1}, pa.struct([("a", pa.int64())])) != one_cell(
        {"b": 1}, pa.struct([("b", pa.int64())])
    )
    assert one_cell([("k", 1)], pa.map_(pa.string(), pa.int64())) != one_cell(
        [{"key": "k", "value": 1}], pa.list_(pa.struct([("key", pa.string()), ("value", pa.int64())]))
    )


def one_cell(value: Any, kind: pa.DataType) -> int:
    return int(row_hashes(pa.table({"c": pa.array([value], kind)}))[0])


def test_fixed_binary_and_uuid_cells():
    raw = bytes(range(16))
    uuid = pa.array([raw, None], pa.binary(16)).cast(pa.uuid())
    fixed = pa.array([raw, None], pa.binary(16))
    assert one_cell(raw, pa.binary(16)) != one_cell(raw, pa.binary())  # fixed[16] is not binary
    uuid_hash = row_hashes(pa.table({"u": uuid}))
    assert uuid_hash[0] != row_hashes(pa.table({"u": fixed}))[0]
    header = int(cell_header("u", Tag.UUID)).to_bytes(8, "little")
    expected = siphash(_ROW_KEY, header + length_prefixed(raw) + bytes(8))
    assert int(uuid_hash[0]) == expected
    assert int(uuid_hash[1]) == siphash(_ROW_KEY, bytes(8))  # a null cell: nothing
